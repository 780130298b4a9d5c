#include "autograd/ops/shape.h"

namespace dtrain::ops {

Variable reshape(const Variable& x, const Shape& shape) {
  const Tensor& xt = x.data();
  if (shape.numel() != xt.numel()) {
    throw ShapeError(fmt::format("reshape: cannot view {} ({} elements) as {} ({} elements)", xt.shape(), xt.numel(),
                                 shape, shape.numel()));
  }
  Tensor y = xt.to_plain().reshape(shape);
  return Variable::from_op(std::move(y), "reshape", {x},
                           [in_shape = xt.shape(), in_layout = xt.layout()](const Tensor& g) {
                             return std::vector<Tensor>{g.to_plain().reshape(in_shape).to_layout(in_layout)};
                           });
}

Variable flatten(const Variable& x) {
  if (x.data().dim() < 1) throw ShapeError("flatten: needs at least one dimension");
  const std::int64_t n = x.shape()[0];
  return reshape(x, Shape{n, n == 0 ? 0 : x.data().numel() / n});
}

}  // namespace dtrain::ops
