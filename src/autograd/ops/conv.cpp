#include "autograd/ops/conv.h"

namespace dtrain::ops {

// dx = conv_transpose(dy, W) (backward data); dW = correlation of x with dy (backward weights).
Variable conv2d(const Variable& x, const Variable& w, const Variable& b, const Conv2dGeometry& g) {
  if (x.data().dim() != 4 || w.data().dim() != 4 || x.shape()[1] != w.shape()[1]) {
    throw ShapeError(fmt::format("conv2d: input {} does not fit weight {} (need [N, {}, H, W])", x.shape(), w.shape(),
                                 w.data().dim() == 4 ? w.shape()[1] : -1));
  }
  const bool has_bias = b.defined();
  Tensor y = dispatch(x.data()).conv2d_forward(x.data(), w.data(), has_bias ? &b.data() : nullptr, g);
  std::vector<Variable> inputs{x, w};
  if (has_bias) inputs.push_back(b);
  const bool need_dx = x.requires_grad();
  return Variable::from_op(std::move(y), "conv2d", inputs,
                           [xt = x.data(), wt = w.data(), has_bias, need_dx, g](const Tensor& dy) {
                             Backend& bk = dispatch(dy);
                             std::vector<Tensor> grads;
                             grads.push_back(need_dx ? bk.conv2d_backward_data(dy, wt, xt.shape(), xt.layout(), g)
                                                     : Tensor());
                             WeightGrads wg = bk.conv2d_backward_weights(dy, xt, wt.shape(), has_bias, g);
                             grads.push_back(std::move(wg.dw));
                             if (has_bias) grads.push_back(std::move(wg.db));
                             return grads;
                           });
}

}  // namespace dtrain::ops
