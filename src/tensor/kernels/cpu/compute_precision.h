// The arithmetic of the convolution and linear-layer kernels: f32, or bf16 (mixed precision: inputs and weights
// rounded to bf16, products accumulated in f32 on the CPU's AVX512_BF16 dot products; convolutions
// write bf16, linear layers f32). Process-wide, like the gemm library (gemm.h). Master weights,
// their gradients and optimizer state stay f32; ReLU, pooling and batch norm read and write bf16
// activations; the rest computes in f32. The reference for a bf16 kernel is the f32 kernel on
// bf16-rounded inputs (round_to_bf16).
#pragma once

#include <bit>
#include <cstdint>
#include <string>

#include "tensor/backend.h"
#include "tensor/tensor.h"

namespace dtrain {

enum class ComputePrecision { kF32, kBF16 };

// InputError when bf16 is asked of a CPU without the bf16 dot-product instructions (naming the
// flag to drop).
void set_compute_precision(ComputePrecision precision);
ComputePrecision compute_precision();
// "f32" or "bf16"; InputError listing them for another name.
ComputePrecision parse_compute_precision(const std::string& name);
const char* compute_precision_name(ComputePrecision precision);
// Whether oneDNN runs bf16 on this CPU's own instructions (AVX512_BF16 or AMX).
bool cpu_has_bf16();

// Whether a CPU kernel writes a weight gradient of `shape` into into.scaled: a bf16 destination in
// bf16 precision (backend.h: WeightGradInto), whose shape and layout it checks; otherwise the
// kernel writes f32 as before.
bool writes_scaled_bf16(const WeightGradInto& into, const Shape& shape);

// Sets the compute precision for the scope's lifetime and restores the one before, also when the
// scope is left by an exception (calibration's bf16 pass, tests).
class ComputePrecisionScope {
 public:
  explicit ComputePrecisionScope(ComputePrecision precision) : previous_(compute_precision()) {
    set_compute_precision(precision);
  }
  ~ComputePrecisionScope();
  ComputePrecisionScope(const ComputePrecisionScope&) = delete;
  ComputePrecisionScope& operator=(const ComputePrecisionScope&) = delete;

 private:
  ComputePrecision previous_;
};

// Every element of a plain f32 tensor rounded to the nearest bf16 (ties to even), kept in f32.
Tensor round_to_bf16(const Tensor& t);
// f32_to_bf16 (dtype.h) without branches, so that loops over it vectorise: nearest bf16, ties to
// even; a NaN stays a quiet NaN.
inline std::uint16_t bf16_rounded(float f) {
  const std::uint32_t x = std::bit_cast<std::uint32_t>(f);
  const auto rounded = static_cast<std::uint16_t>((x + 0x7fffu + ((x >> 16) & 1u)) >> 16);
  const auto quiet_nan = static_cast<std::uint16_t>((x >> 16) | 0x40u);
  return (x & 0x7fffffffu) > 0x7f800000u ? quiet_nan : rounded;
}

// dst[i] = src[i] rounded to the nearest bf16 (ties to even; NaN stays a quiet NaN), over OpenMP
// threads: the fast kernels' conversion where a tensor keeps its layout and changes only its type
// (a convolution's output gradient), at the memory's rate where oneDNN's reorder ran at a third
// of it on some shapes.
void round_to_bf16(const float* src, std::uint16_t* dst, std::int64_t n);
// t (f32 or bf16, in its layout) as bf16: itself, or a new tensor of its elements rounded so.
Tensor as_bf16(const Tensor& t);

}  // namespace dtrain
