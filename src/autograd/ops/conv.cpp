#include "autograd/ops/conv.h"

namespace dtrain::ops {

// dx = conv_transpose(dy, W) (backward data); dW = correlation of x with dy (backward weights).
Variable conv2d(const Variable& x, const Variable& w, const Variable& b, const Conv2dGeometry& g) {
  if (x.data().dim() != 4 || w.data().dim() != 4 || x.shape()[1] != w.shape()[1]) {
    throw ShapeError(fmt::format("conv2d: input {} does not fit weight {} (need [N, {}, H, W])", x.shape(), w.shape(),
                                 w.data().dim() == 4 ? w.shape()[1] : -1));
  }
  const bool has_bias = b.defined();
  Tensor kept;
  Tensor y = dispatch(x.data()).conv2d_forward_keeping(x.data(), w.data(), has_bias ? &b.data() : nullptr, g, kept);
  std::vector<Variable> inputs{x, w};
  if (has_bias) inputs.push_back(b);
  const bool need_dx = x.requires_grad();
  Variable out = Variable::from_op(
      std::move(y), "conv2d", inputs, [xt = x.data(), kept, wt = w.data(), has_bias, need_dx, g](const Tensor& dy) {
        // dW straight into the weight's 16-bit wire slot, scaled, where it has one and the backend can.
        WeightGradInto into;
        if (dy.device() == Device::cpu()) {
          const ScaledDestination scaled = scaled_gradient_destination(1, wt.shape());
          into = {nullptr, scaled.tensor, scaled.scale};
        }
        ConvGrads cg = dispatch(dy).conv2d_backward(dy, xt, kept, wt, need_dx, has_bias, g, into);
        std::vector<Tensor> grads{std::move(cg.dx), std::move(cg.weights.dw)};
        if (has_bias) grads.push_back(std::move(cg.weights.db));
        return grads;
      });
  // A bf16 dy (the backward of a bf16 batch norm after it) is what the bf16 primitives read.
  if (out.grad_fn()) out.grad_fn()->reads_bf16_gradient = true;
  return out;
}

}  // namespace dtrain::ops
