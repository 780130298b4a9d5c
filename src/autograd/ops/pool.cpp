#include "autograd/ops/pool.h"

namespace dtrain::ops {
namespace {

Variable pool(const Variable& x, PoolKind kind, const Pool2dGeometry& g, const char* name) {
  if (x.data().dim() != 4) throw ShapeError(fmt::format("{}: input must be [N, C, H, W], got {}", name, x.shape()));
  PoolForward fwd = dispatch(x.data()).pool2d_forward(x.data(), kind, g);
  Tensor y = fwd.y;
  const bool bf16_gradient = y.dtype() == DType::kBF16 && routes_gradient_as_is(kind, g);
  Variable out = Variable::from_op(std::move(y), name, {x}, [xt = x.data(), fwd, kind, g](const Tensor& dy) {
    return std::vector<Tensor>{dispatch(dy).pool2d_backward(dy, xt, fwd, kind, g)};
  });
  // Max pooling of a bf16 activation in windows that do not overlap takes a bf16 gradient as it
  // is and gives one back (kernels/cpu/pool.cpp).
  if (bf16_gradient && out.grad_fn()) out.grad_fn()->reads_bf16_gradient = true;
  return out;
}

}  // namespace

Variable max_pool2d(const Variable& x, const Pool2dGeometry& g) { return pool(x, PoolKind::kMax, g, "max_pool2d"); }
Variable avg_pool2d(const Variable& x, const Pool2dGeometry& g) { return pool(x, PoolKind::kAvg, g, "avg_pool2d"); }

Variable global_avg_pool2d(const Variable& x) {
  if (x.data().dim() != 4) {
    throw ShapeError(fmt::format("global_avg_pool2d: input must be [N, C, H, W], got {}", x.shape()));
  }
  Pool2dGeometry g;
  g.kernel_h = g.stride_h = x.shape()[2];
  g.kernel_w = g.stride_w = x.shape()[3];
  return pool(x, PoolKind::kAvg, g, "global_avg_pool2d");
}

}  // namespace dtrain::ops
