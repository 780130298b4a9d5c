// Index arithmetic of memory layouts, and the generic reorder between them.
#pragma once

#include <cstdint>

#include "tensor/tensor.h"

namespace dtrain {

// Element offset of logical index (n, c, h, w) in an nChw16c tensor of shape [N, C, H, W].
inline std::int64_t nchw16c_offset(std::int64_t n, std::int64_t c, std::int64_t h, std::int64_t w, std::int64_t C,
                                   std::int64_t H, std::int64_t W) {
  return ((n * (C / 16) + c / 16) * H * W + h * W + w) * 16 + (c % 16);
}

// Whether a tensor of this shape can use the layout (nChw16c needs 4-D with C % 16 == 0).
bool layout_supports(Layout layout, const Shape& shape);

// dst = src for same-dtype tensors of equal shape in any two layouts (host memory).
void reorder_host(const Tensor& src, Tensor& dst);

}  // namespace dtrain
