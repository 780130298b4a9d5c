#include "tensor/kernels/geometry.h"

#include "tensor/kernels/reference/reference_backend.h"

namespace dtrain {

ConvDims conv_dims(const Shape& x, const Shape& w, const Conv2dGeometry& g) {
  if (x.rank() != 4 || w.rank() != 4 || x[1] != w[1]) {
    throw ShapeError(
        fmt::format("conv2d: input {} does not fit weight {} (need [N, C, H, W] and [O, C, KH, KW])", x, w));
  }
  return {x[0],
          x[1],
          x[2],
          x[3],
          w[0],
          w[2],
          w[3],
          window_output_size(x[2], w[2], g.stride_h, g.pad_h, "conv2d"),
          window_output_size(x[3], w[3], g.stride_w, g.pad_w, "conv2d")};
}

PoolDims pool_dims(const Shape& x, const Pool2dGeometry& g) {
  if (x.rank() != 4) throw ShapeError(fmt::format("pool2d: input must be [N, C, H, W], got {}", x));
  if (g.pad_h * 2 > g.kernel_h || g.pad_w * 2 > g.kernel_w) {
    throw ShapeError(fmt::format("pool2d: padding ({}, {}) must be at most half the kernel ({}, {})", g.pad_h, g.pad_w,
                                 g.kernel_h, g.kernel_w));
  }
  return {x[0],
          x[1],
          x[2],
          x[3],
          window_output_size(x[2], g.kernel_h, g.stride_h, g.pad_h, "pool2d"),
          window_output_size(x[3], g.kernel_w, g.stride_w, g.pad_w, "pool2d")};
}

void check_linear(const Tensor& x, const Tensor& w) {
  if (x.dim() != 2 || w.dim() != 2 || x.size(1) != w.size(1)) {
    throw ShapeError(
        fmt::format("linear: input {} does not fit weight {} (need [N, I] and [O, I])", x.shape(), w.shape()));
  }
}

void check_labels(const Tensor& logits, const Tensor& labels) {
  if (logits.dim() != 2 || labels.dim() != 1 || labels.size(0) != logits.size(0) || labels.dtype() != DType::kI32) {
    throw ShapeError(fmt::format("cross-entropy: logits {} and labels {} (need [N, K] and i32 [N])", logits.shape(),
                                 labels.shape()));
  }
  const std::int32_t* l = labels.data<std::int32_t>();
  for (std::int64_t n = 0; n < labels.numel(); ++n) {
    if (l[n] < 0 || l[n] >= logits.size(1)) {
      throw ShapeError(
          fmt::format("cross-entropy: label {} at position {} is outside [0, {})", l[n], n, logits.size(1)));
    }
  }
}

}  // namespace dtrain
