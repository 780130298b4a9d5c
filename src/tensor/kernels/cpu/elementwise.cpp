// Fast CPU elementwise kernels: contiguous loops the compiler vectorises, split over OpenMP
// threads. Operands of equal layout are processed storage order, whatever the layout.
#include <bit>
#include <cstring>

#include "tensor/kernels/cpu/compute_precision.h"
#include "tensor/kernels/cpu/cpu_backend.h"
#include "tensor/layout.h"

namespace dtrain {
namespace {

// Loops below this many elements run on the calling thread (a parallel region costs ~1-5 us).
// The `if` clauses name `parallel`: unnamed, an `if` on `parallel for simd` applies to the simd
// construct too (OpenMP 5.0), and GCC then compiled the loops below the threshold as scalar
// code. relu_backward's became a branch per element: on [64,512] 49.8 us for random signs
// (bench_kernels) and up to 127 us in training on Fashion-MNIST; 3.3 and 5 us vectorised.
constexpr std::int64_t kElementwiseParallelMin = 1 << 16;

// counter_uniform (reference_backend.h), inlined so the mask loop vectorises; must stay identical.
inline double uniform_at(std::uint64_t seed, std::uint64_t index) {
  std::uint64_t z = seed * 0x9e3779b97f4a7c15ull + index + 0x632be59bd9b4e019ull;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  z ^= z >> 31;
  return static_cast<double>(z >> 11) * 0x1.0p-53;
}

}  // namespace

void CpuBackend::fill(Tensor& t, double value) {
  if (!is_f32(t)) return ReferenceBackend::fill(t, value);
  float* p = t.data<float>();
  const float v = static_cast<float>(value);
  const std::int64_t n = t.numel();
#pragma omp parallel for schedule(static) if (n > kElementwiseParallelMin)
  for (std::int64_t i = 0; i < n; ++i) p[i] = v;
}

void CpuBackend::copy(const Tensor& src, Tensor& dst) {
  check_same_shape(src, dst, "copy");
  if (src.dtype() == dst.dtype() && src.layout() == dst.layout()) {
    std::memcpy(dst.raw_data(), src.raw_data(), src.nbytes());
    return;
  }
  ReferenceBackend::copy(src, dst);
}

namespace {

// Loads element i of an f32 or bf16 operand as f32 (bf16 activations: relu_forward_activation).
inline float load_f32(const void* p, bool bf16, std::int64_t i) {
  return bf16 ? bf16_to_f32(static_cast<const std::uint16_t*>(p)[i]) : static_cast<const float*>(p)[i];
}

}  // namespace

// The residual addition of a bf16 activation (the block's input) to an f32 one (its last batch
// norm) writes f32, as every addition here does.
Tensor CpuBackend::add(const Tensor& a, const Tensor& b_in) {
  check_same_shape(a, b_in, "add");
  if (!is_f32_or_bf16(a) || !is_f32_or_bf16(b_in)) return ReferenceBackend::add(a, b_in);
  const Tensor b = b_in.to_layout(a.layout());
  Tensor out = Tensor::empty(a.shape(), DType::kF32, a.device(), a.layout());
  float* o = out.data<float>();
  const std::int64_t n = a.numel();
  if (is_f32(a) && is_f32(b)) {
    const float* x = a.data<float>();
    const float* y = b.data<float>();
#pragma omp parallel for schedule(static) if (n > kElementwiseParallelMin)
    for (std::int64_t i = 0; i < n; ++i) o[i] = x[i] + y[i];
    return out;
  }
  const void* x = a.raw_data();
  const void* y = b.raw_data();
  const bool x16 = !is_f32(a), y16 = !is_f32(b);
#pragma omp parallel for simd schedule(static) if (parallel : n > kElementwiseParallelMin)
  for (std::int64_t i = 0; i < n; ++i) o[i] = load_f32(x, x16, i) + load_f32(y, y16, i);
  return out;
}

// Two bf16 activations in bf16 compute precision: summed in f32, rounded once to bf16.
Tensor CpuBackend::add_activation(const Tensor& a, const Tensor& b_in) {
  const bool bf16 = a.dtype() == DType::kBF16 && b_in.dtype() == DType::kBF16;
  if (!bf16 || compute_precision() != ComputePrecision::kBF16) return add(a, b_in);
  check_same_shape(a, b_in, "add");
  const Tensor b = b_in.to_layout(a.layout());
  Tensor out = Tensor::empty(a.shape(), DType::kBF16, a.device(), a.layout());
  const auto* x = static_cast<const std::uint16_t*>(a.raw_data());
  const auto* y = static_cast<const std::uint16_t*>(b.raw_data());
  auto* o = static_cast<std::uint16_t*>(out.raw_data());
  const std::int64_t n = a.numel();
#pragma omp parallel for simd schedule(static) if (parallel : n > kElementwiseParallelMin)
  for (std::int64_t i = 0; i < n; ++i) o[i] = bf16_rounded(bf16_to_f32(x[i]) + bf16_to_f32(y[i]));
  return out;
}

void CpuBackend::axpy(double alpha, const Tensor& x_in, Tensor& y) {
  check_same_shape(x_in, y, "axpy");
  if (!is_f32(x_in) || !is_f32(y)) return ReferenceBackend::axpy(alpha, x_in, y);
  const Tensor x = x_in.to_layout(y.layout());
  const float* s = x.data<float>();
  float* d = y.data<float>();
  const float a = static_cast<float>(alpha);
  const std::int64_t n = y.numel();
#pragma omp parallel for schedule(static) if (n > kElementwiseParallelMin)
  for (std::int64_t i = 0; i < n; ++i) d[i] += a * s[i];
}

void CpuBackend::scale(Tensor& t, double alpha) {
  if (!is_f32(t)) return ReferenceBackend::scale(t, alpha);
  float* d = t.data<float>();
  const float a = static_cast<float>(alpha);
  const std::int64_t n = t.numel();
#pragma omp parallel for schedule(static) if (n > kElementwiseParallelMin)
  for (std::int64_t i = 0; i < n; ++i) d[i] *= a;
}

Tensor CpuBackend::mul(const Tensor& a, const Tensor& b_in) {
  check_same_shape(a, b_in, "mul");
  if (!is_f32(a) || !is_f32(b_in)) return ReferenceBackend::mul(a, b_in);
  const Tensor b = b_in.to_layout(a.layout());
  Tensor out = Tensor::empty_like(a);
  const float* x = a.data<float>();
  const float* y = b.data<float>();
  float* o = out.data<float>();
  const std::int64_t n = a.numel();
#pragma omp parallel for simd schedule(static) if (parallel : n > kElementwiseParallelMin)
  for (std::int64_t i = 0; i < n; ++i) o[i] = x[i] * y[i];
  return out;
}

Tensor CpuBackend::relu_forward(const Tensor& x) {
  if (x.dtype() == DType::kBF16) return relu_to_bf16(x);
  if (!is_f32(x)) return ReferenceBackend::relu_forward(x);
  Tensor out = Tensor::empty_like(x);
  const float* s = x.data<float>();
  float* o = out.data<float>();
  const std::int64_t n = x.numel();
#pragma omp parallel for simd schedule(static) if (parallel : n > kElementwiseParallelMin)
  for (std::int64_t i = 0; i < n; ++i) o[i] = s[i] > 0.0f ? s[i] : 0.0f;
  return out;
}

Tensor CpuBackend::relu_forward_activation(const Tensor& x) {
  if (compute_precision() != ComputePrecision::kBF16 || !is_f32_or_bf16(x)) return relu_forward(x);
  return relu_to_bf16(x);
}

// max(x, 0) rounded to bf16 (ties to even, as f32_to_bf16; NaN goes to 0, as in the f32 loop),
// from f32 or bf16 x.
Tensor CpuBackend::relu_to_bf16(const Tensor& x) {
  Tensor out = Tensor::empty(x.shape(), DType::kBF16, x.device(), x.layout());
  auto* o = static_cast<std::uint16_t*>(out.raw_data());
  const std::int64_t n = x.numel();
  if (x.dtype() == DType::kBF16) {
    const auto* s = static_cast<const std::uint16_t*>(x.raw_data());
    // Bit patterns up to 0x7f80 (+inf) are +0 and the positive numbers; the rest are negative or
    // NaN, which go to 0 as in the f32 loop.
#pragma omp parallel for simd schedule(static) if (parallel : n > kElementwiseParallelMin)
    for (std::int64_t i = 0; i < n; ++i) o[i] = s[i] <= 0x7f80u ? s[i] : std::uint16_t{0};
    return out;
  }
  const float* s = x.data<float>();
#pragma omp parallel for simd schedule(static) if (parallel : n > kElementwiseParallelMin)
  for (std::int64_t i = 0; i < n; ++i) o[i] = bf16_rounded(s[i] > 0.0f ? s[i] : 0.0f);
  return out;
}

// dy * (y > 0) from f32 or bf16 y; the gradient is f32, or bf16 where y and dy both are.
Tensor CpuBackend::relu_backward(const Tensor& y, const Tensor& dy_in) {
  check_same_shape(y, dy_in, "relu_backward");
  if (y.dtype() == DType::kBF16 && dy_in.dtype() == DType::kBF16) return relu_backward_bf16(y, dy_in);
  if (!is_f32_or_bf16(y) || !is_f32(dy_in)) return ReferenceBackend::relu_backward(y, dy_in);
  const Tensor dy = dy_in.to_layout(y.layout());
  Tensor out = Tensor::empty(y.shape(), DType::kF32, y.device(), y.layout());
  const float* g = dy.data<float>();
  float* o = out.data<float>();
  const std::int64_t n = y.numel();
  if (y.dtype() == DType::kBF16) {
    const auto* s = static_cast<const std::uint16_t*>(y.raw_data());
    // y > 0 for the bit patterns 0x0001 (the smallest positive) to 0x7f80 (+inf).
#pragma omp parallel for simd schedule(static) if (parallel : n > kElementwiseParallelMin)
    for (std::int64_t i = 0; i < n; ++i) o[i] = s[i] != 0 && s[i] <= 0x7f80u ? g[i] : 0.0f;
    return out;
  }
  const float* s = y.data<float>();
#pragma omp parallel for simd schedule(static) if (parallel : n > kElementwiseParallelMin)
  for (std::int64_t i = 0; i < n; ++i) o[i] = s[i] > 0.0f ? g[i] : 0.0f;
  return out;
}

// The bf16 gradient of a bf16 ReLU: a mask, so its bits are those of the f32 path's gradient
// rounded to bf16, without widening dy and rounding dx.
Tensor CpuBackend::relu_backward_bf16(const Tensor& y, const Tensor& dy_in) {
  const Tensor dy = dy_in.to_layout(y.layout());
  Tensor out = Tensor::empty(y.shape(), DType::kBF16, y.device(), y.layout());
  const auto* s = static_cast<const std::uint16_t*>(y.raw_data());
  const auto* g = static_cast<const std::uint16_t*>(dy.raw_data());
  auto* o = static_cast<std::uint16_t*>(out.raw_data());
  const std::int64_t n = y.numel();
#pragma omp parallel for simd schedule(static) if (parallel : n > kElementwiseParallelMin)
  for (std::int64_t i = 0; i < n; ++i) o[i] = s[i] != 0 && s[i] <= 0x7f80u ? g[i] : std::uint16_t{0};
  return out;
}

Tensor CpuBackend::dropout_mask(const Shape& shape, double keep_prob, std::uint64_t seed) {
  DT_CHECK(keep_prob > 0 && keep_prob <= 1, "keep probability {} outside (0, 1]", keep_prob);
  Tensor mask = Tensor::empty(shape, DType::kF32);
  float* m = mask.data<float>();
  const float kept = static_cast<float>(1.0 / keep_prob);
  const std::int64_t n = mask.numel();
#pragma omp parallel for simd schedule(static) if (parallel : n > kElementwiseParallelMin / 4)
  for (std::int64_t i = 0; i < n; ++i) {
    m[i] = uniform_at(seed, static_cast<std::uint64_t>(i)) < keep_prob ? kept : 0.0f;
  }
  return mask;
}

double CpuBackend::sum(const Tensor& x) {
  if (!is_f32(x)) return ReferenceBackend::sum(x);
  const float* p = x.data<float>();
  const std::int64_t n = x.numel();
  double s = 0;
#pragma omp parallel for simd schedule(static) reduction(+ : s) if (parallel : n > kElementwiseParallelMin)
  for (std::int64_t i = 0; i < n; ++i) s += static_cast<double>(p[i]);
  return s;
}

double CpuBackend::sum_of_squares(const Tensor& x) {
  if (!is_f32(x)) return ReferenceBackend::sum_of_squares(x);
  const float* p = x.data<float>();
  const std::int64_t n = x.numel();
  double s = 0;
#pragma omp parallel for simd schedule(static) reduction(+ : s) if (parallel : n > kElementwiseParallelMin)
  for (std::int64_t i = 0; i < n; ++i) {
    const double v = p[i];
    s += v * v;
  }
  return s;
}

bool CpuBackend::all_finite(const Tensor& x) {
  if (!is_f32(x)) return ReferenceBackend::all_finite(x);
  const float* p = x.data<float>();
  const std::int64_t n = x.numel();
  std::uint32_t bad = 0;
  // An f32 is Inf or NaN exactly when its exponent bits are all ones.
#pragma omp parallel for simd schedule(static) reduction(| : bad) if (parallel : n > kElementwiseParallelMin)
  for (std::int64_t i = 0; i < n; ++i) {
    bad |= (std::bit_cast<std::uint32_t>(p[i]) & 0x7f800000u) == 0x7f800000u ? 1u : 0u;
  }
  return bad == 0;
}

Backend& cpu_backend() {
  static CpuBackend backend;
  return backend;
}

}  // namespace dtrain
