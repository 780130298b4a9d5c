// 2-D convolution.
#pragma once

#include "autograd/variable.h"
#include "tensor/backend.h"

namespace dtrain::ops {

// x [N, C, H, W], w [O, C, KH, KW], b [O] or undefined.
Variable conv2d(const Variable& x, const Variable& w, const Variable& b, const Conv2dGeometry& g);

}  // namespace dtrain::ops
