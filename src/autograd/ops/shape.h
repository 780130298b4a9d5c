// Shape ops: flatten and reshape (plain layout; blocked inputs are reordered first).
#pragma once

#include "autograd/variable.h"

namespace dtrain::ops {

// [N, d1, d2, ...] -> [N, d1*d2*...]
Variable flatten(const Variable& x);
Variable reshape(const Variable& x, const Shape& shape);

}  // namespace dtrain::ops
