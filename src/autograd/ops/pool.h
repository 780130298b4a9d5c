// Max, average and global average pooling.
#pragma once

#include "autograd/variable.h"
#include "tensor/backend.h"

namespace dtrain::ops {

Variable max_pool2d(const Variable& x, const Pool2dGeometry& g);
Variable avg_pool2d(const Variable& x, const Pool2dGeometry& g);
// Mean over H and W: [N, C, H, W] -> [N, C, 1, 1].
Variable global_avg_pool2d(const Variable& x);

}  // namespace dtrain::ops
