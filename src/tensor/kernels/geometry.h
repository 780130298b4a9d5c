// Shape checks and output extents shared by every backend's convolution, pooling and loss
// kernels, so all backends accept exactly the same inputs and word their errors alike.
#pragma once

#include <cstdint>

#include "tensor/backend.h"

namespace dtrain {

struct ConvDims {
  std::int64_t N, C, H, W, O, KH, KW, OH, OW;
};
// Throws ShapeError unless x [N, C, H, W] and w [O, C, KH, KW] fit and the window fits.
ConvDims conv_dims(const Shape& x, const Shape& w, const Conv2dGeometry& g);

struct PoolDims {
  std::int64_t N, C, H, W, OH, OW;
};
// Throws ShapeError unless x is [N, C, H, W], padding is at most half the kernel, and the
// window fits.
PoolDims pool_dims(const Shape& x, const Pool2dGeometry& g);

// Throws ShapeError unless x is [N, I] and w is [O, I].
void check_linear(const Tensor& x, const Tensor& w);

// Throws ShapeError unless logits are [N, K], labels i32 [N] and every label in [0, K).
void check_labels(const Tensor& logits, const Tensor& labels);

}  // namespace dtrain
