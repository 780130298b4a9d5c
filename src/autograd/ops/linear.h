// Fully connected layer: y = x W^T + b.
#pragma once

#include "autograd/variable.h"

namespace dtrain::ops {

// x [N, I], w [O, I], b [O] or undefined.
Variable linear(const Variable& x, const Variable& w, const Variable& b);

}  // namespace dtrain::ops
