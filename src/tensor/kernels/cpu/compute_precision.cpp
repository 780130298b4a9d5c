#include "tensor/kernels/cpu/compute_precision.h"

#include <fmt/format.h>

#include <atomic>
#include <cstring>
#include <dnnl.hpp>

#include "core/error.h"

namespace dtrain {
namespace {

std::atomic<ComputePrecision> g_precision{ComputePrecision::kF32};

}  // namespace

bool cpu_has_bf16() {
  static const bool has = dnnl::get_effective_cpu_isa() >= dnnl::cpu_isa::avx512_core_bf16;
  return has;
}

void set_compute_precision(ComputePrecision precision) {
  if (precision == ComputePrecision::kBF16 && !cpu_has_bf16()) {
    throw InputError(
        "--precision bf16: this CPU lacks the bf16 dot-product instructions (avx512_bf16 or AMX) that oneDNN's bf16 "
        "convolutions run on; drop --precision bf16 (f32 is the default)");
  }
  g_precision.store(precision, std::memory_order_relaxed);
}

// The precision before the scope was set once already: restored without the check, so no throw.
ComputePrecisionScope::~ComputePrecisionScope() { g_precision.store(previous_, std::memory_order_relaxed); }

ComputePrecision compute_precision() { return g_precision.load(std::memory_order_relaxed); }

ComputePrecision parse_compute_precision(const std::string& name) {
  if (name == "f32") return ComputePrecision::kF32;
  if (name == "bf16") return ComputePrecision::kBF16;
  throw InputError(fmt::format("--precision: unknown precision '{}'; valid: f32, bf16", name));
}

bool writes_scaled_bf16(const WeightGradInto& into, const Shape& shape) {
  if (into.scaled == nullptr || into.scaled->dtype() != DType::kBF16 || compute_precision() != ComputePrecision::kBF16)
    return false;
  check_scaled_weight_destination(*into.scaled, shape);
  return true;
}

const char* compute_precision_name(ComputePrecision precision) {
  return precision == ComputePrecision::kBF16 ? "bf16" : "f32";
}

Tensor round_to_bf16(const Tensor& t) {
  Tensor out = t.to_plain().clone();
  float* p = out.data<float>();
  for (std::int64_t i = 0; i < out.numel(); ++i) {
    std::uint32_t bits;
    std::memcpy(&bits, &p[i], sizeof bits);
    // Round to nearest, ties to even, on the 16 bits dropped (NaN and Inf keep their class).
    if ((bits & 0x7f800000u) != 0x7f800000u) bits += 0x7fffu + ((bits >> 16) & 1u);
    bits &= 0xffff0000u;
    std::memcpy(&p[i], &bits, sizeof bits);
  }
  return out;
}

void round_to_bf16(const float* src, std::uint16_t* dst, std::int64_t n) {
#pragma omp parallel for simd schedule(static) if (parallel : n > (1 << 16))
  for (std::int64_t i = 0; i < n; ++i) dst[i] = bf16_rounded(src[i]);
}

Tensor as_bf16(const Tensor& t) {
  if (t.dtype() == DType::kBF16) return t;
  Tensor out = Tensor::empty(t.shape(), DType::kBF16, t.device(), t.layout());
  round_to_bf16(t.data<float>(), static_cast<std::uint16_t*>(out.raw_data()), t.numel());
  return out;
}

}  // namespace dtrain
