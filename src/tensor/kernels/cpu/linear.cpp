// Linear layers as one matrix product each (kernels/cpu/gemm.h: sgemm on oneDNN or OpenBLAS, or
// in bf16 runs gemm_bf16: bf16 operands, f32 sums and outputs):
//   forward        y[N, O]  = x[N, I] w[O, I]^T (+ b, written first and accumulated with beta = 1)
//   backward data  dx[N, I] = dy[N, O] w[O, I]
//   backward wts   dw[O, I] = dy[N, O]^T x[N, I],  db[O] = column sums of dy
// x may be a bf16 activation (Backend::relu_forward_activation), and w in bf16 compute precision
// the bf16 weight linear_weight_operand rounded: gemm_bf16 reads both as they are.
#include <algorithm>

#include "tensor/kernels/cpu/compute_precision.h"
#include "tensor/kernels/cpu/cpu_backend.h"
#include "tensor/kernels/cpu/gemm.h"
#include "tensor/kernels/geometry.h"

namespace dtrain {
namespace {

// Whether x is a bf16 operand (an activation, a rounded weight) that the bf16 matrix product
// reads as it is.
bool read_as_bf16(const Tensor& x) {
  return x.dtype() == DType::kBF16 && compute_precision() == ComputePrecision::kBF16;
}

// x, or, for a bf16 activation in an f32 run, x widened to f32.
Tensor linear_input(const Tensor& x) { return read_as_bf16(x) ? x : f32_operand(x); }

// The matrix product with x (plain [rows, cols]) as operand A or B.
GemmBf16Operand operand(const Tensor& x) { return {x.raw_data(), x.dtype() == DType::kBF16}; }

// A weight the kernels read: f32, or a bf16 one (linear_weight_operand) in bf16 precision.
bool readable_weight(const Tensor& w) { return is_f32(w) || read_as_bf16(w); }

}  // namespace

Tensor CpuBackend::linear_forward(const Tensor& x_in, const Tensor& w, const Tensor* b) {
  const Tensor x = linear_input(x_in);
  if ((!is_f32(x) && !read_as_bf16(x)) || !readable_weight(w) || (b != nullptr && !is_f32(*b)))
    return ReferenceBackend::linear_forward(x, f32_operand(w), b);
  check_linear(x, w);
  const std::int64_t N = x.size(0), I = x.size(1), O = w.size(0);
  if (b != nullptr && b->numel() != O) {
    throw ShapeError(fmt::format("linear: bias {} does not fit {} outputs", b->shape(), O));
  }
  Tensor y = Tensor::empty({N, O}, DType::kF32);
  float* py = y.data<float>();
  if (b != nullptr) {
    const float* pb = b->data<float>();
#pragma omp parallel for schedule(static) if (N * O > (1 << 16))
    for (std::int64_t n = 0; n < N; ++n) {
#pragma omp simd
      for (std::int64_t o = 0; o < O; ++o) py[n * O + o] = pb[o];
    }
  }
  const float beta = b != nullptr ? 1.0f : 0.0f;
  if (read_as_bf16(x) || read_as_bf16(w)) {
    gemm_bf16(false, true, N, O, I, 1.0f, operand(x), I, operand(w), I, beta, py, O);
  } else {
    matrix_multiply(false, true, N, O, I, 1.0f, x.data<float>(), I, w.data<float>(), I, beta, py, O);
  }
  return y;
}

Tensor CpuBackend::linear_weight_operand(const Tensor& w) {
  if (compute_precision() != ComputePrecision::kBF16 || !is_f32(w) || w.dim() != 2) return w;
  return as_bf16(w);
}

Tensor CpuBackend::linear_backward_data(const Tensor& dy, const Tensor& w) {
  if (!is_f32(dy) || !readable_weight(w)) return ReferenceBackend::linear_backward_data(dy, f32_operand(w));
  DT_CHECK(dy.dim() == 2 && w.dim() == 2 && dy.size(1) == w.size(0), "linear backward: gradient {} and weight {}",
           dy.shape(), w.shape());
  const std::int64_t N = dy.size(0), O = w.size(0), I = w.size(1);
  Tensor dx = Tensor::empty({N, I}, DType::kF32);
  if (read_as_bf16(w)) {
    gemm_bf16(false, false, N, I, O, 1.0f, {dy.data<float>()}, O, operand(w), I, 0.0f, dx.data<float>(), I);
  } else {
    matrix_multiply(false, false, N, I, O, 1.0f, dy.data<float>(), O, w.data<float>(), I, 0.0f, dx.data<float>(), I);
  }
  return dx;
}

// In bf16 precision a bf16 scaled destination (backend.h: WeightGradInto) receives the matmul's f32
// sums times the scale, rounded to bf16 as they leave it: the bits of rounding scale * dw, in the pass
// that computes dw, where writing dw in f32 and casting it would read and write it again (LeNet's fc1:
// 12.8 MB a step).
WeightGrads CpuBackend::linear_backward_weights(const Tensor& dy, const Tensor& x_in, bool with_bias,
                                                const WeightGradInto& into) {
  const Tensor x = linear_input(x_in);
  if (!is_f32(dy) || (!is_f32(x) && !read_as_bf16(x)))
    return ReferenceBackend::linear_backward_weights(dy, x, with_bias, into);
  DT_CHECK(dy.dim() == 2 && x.dim() == 2 && dy.size(0) == x.size(0), "linear backward: gradient {} and input {}",
           dy.shape(), x.shape());
  const std::int64_t N = x.size(0), I = x.size(1), O = dy.size(1);
  if (into.f32 != nullptr) check_weight_destination(*into.f32, Shape{O, I});
  const bool scaled = N > 0 && writes_scaled_bf16(into, Shape{O, I});
  WeightGrads out{scaled                ? *into.scaled
                  : into.f32 != nullptr ? *into.f32
                                        : Tensor::empty({O, I}, DType::kF32),
                  with_bias ? Tensor::empty({O}, DType::kF32) : Tensor()};
  const float* g = dy.data<float>();
  if (N == 0) {
    out.dw.fill(0.0);
  } else if (scaled) {
    gemm_bf16_scaled_to_bf16(true, false, O, I, N, {g}, O, operand(x), I, into.scale,
                             static_cast<std::uint16_t*>(out.dw.raw_data()), I);
  } else {
    if (read_as_bf16(x)) {
      gemm_bf16(true, false, O, I, N, 1.0f, {g}, O, operand(x), I, 0.0f, out.dw.data<float>(), I);
    } else {
      matrix_multiply(true, false, O, I, N, 1.0f, g, O, x.data<float>(), I, 0.0f, out.dw.data<float>(), I);
    }
  }
  if (with_bias) {
    float* db = out.db.data<float>();
    // Column sums, vectorised along the row; blocks of columns go to different threads.
    constexpr std::int64_t kBlock = 256;
    const std::int64_t blocks = (O + kBlock - 1) / kBlock;
#pragma omp parallel for schedule(static) if (N * O > (1 << 17))
    for (std::int64_t blk = 0; blk < blocks; ++blk) {
      const std::int64_t o0 = blk * kBlock, o1 = std::min(O, o0 + kBlock);
      float acc[kBlock] = {};
      for (std::int64_t n = 0; n < N; ++n) {
        const float* row = g + n * O;
#pragma omp simd
        for (std::int64_t o = o0; o < o1; ++o) acc[o - o0] += row[o];
      }
      for (std::int64_t o = o0; o < o1; ++o) db[o] = acc[o - o0];
    }
  }
  return out;
}

}  // namespace dtrain
