// Index arithmetic of memory layouts, and the generic reorder between them.
#pragma once

#include <cstdint>

#include "tensor/tensor.h"

namespace dtrain {

// Whether a tensor of this shape can use the layout (nChw16c needs 4-D with C % 16 == 0, nChw8c
// with C % 8 == 0).
bool layout_supports(Layout layout, const Shape& shape);
// Throws ShapeError naming the block size unless layout_supports(layout, shape).
void check_layout_supports(Layout layout, const Shape& shape);

// dst = src for same-dtype tensors of equal shape in any two layouts (host memory).
void reorder_host(const Tensor& src, Tensor& dst);

}  // namespace dtrain
