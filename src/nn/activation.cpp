#include "nn/activation.h"

#include "autograd/ops/elementwise.h"
#include "autograd/ops/pool.h"
#include "autograd/ops/shape.h"
#include "core/random.h"

namespace dtrain {

Variable ReLU::forward(const Variable& x) { return ops::relu(x); }

Variable Dropout::forward(const Variable& x) {
  if (!training() || p_ == 0) return x;
  return ops::dropout(x, p_, rng_key(seed_, calls_++));
}

Variable Flatten::forward(const Variable& x) { return ops::flatten(x); }

Pool2d::Pool2d(PoolKind kind, std::int64_t kernel, std::int64_t stride, std::int64_t padding)
    : Module(kernel == 0 ? "global_avg_pool" : (kind == PoolKind::kMax ? "max_pool" : "avg_pool")),
      kind_(kind),
      global_(kernel == 0) {
  geometry_.kernel_h = geometry_.kernel_w = kernel;
  geometry_.stride_h = geometry_.stride_w = stride;
  geometry_.pad_h = geometry_.pad_w = padding;
}

Variable Pool2d::forward(const Variable& x) {
  if (global_) return ops::global_avg_pool2d(x);
  return kind_ == PoolKind::kMax ? ops::max_pool2d(x, geometry_) : ops::avg_pool2d(x, geometry_);
}

}  // namespace dtrain
