#include "autograd/ops/linear.h"

#include "tensor/backend.h"

namespace dtrain::ops {

// dx = dy W,  dW = dy^T x,  db = sum over the batch of dy.
Variable linear(const Variable& x, const Variable& w, const Variable& b) {
  if (x.data().dim() != 2 || w.data().dim() != 2 || x.shape()[1] != w.shape()[1]) {
    throw ShapeError(fmt::format("linear: input {} does not fit weight {} (need [N, {}])", x.shape(), w.shape(),
                                 w.data().dim() == 2 ? w.shape()[1] : -1));
  }
  const bool has_bias = b.defined();
  if (has_bias && (b.data().dim() != 1 || b.shape()[0] != w.shape()[0])) {
    throw ShapeError(fmt::format("linear: bias {} does not fit weight {}", b.shape(), w.shape()));
  }
  Backend& be = dispatch(x.data());
  const Tensor wt = be.linear_weight_operand(w.data());
  Tensor y = be.linear_forward(x.data(), wt, has_bias ? &b.data() : nullptr);
  std::vector<Variable> inputs{x, w};
  if (has_bias) inputs.push_back(b);
  const bool need_dx = x.requires_grad();
  return Variable::from_op(std::move(y), "linear", inputs, [xt = x.data(), wt, has_bias, need_dx](const Tensor& g) {
    Backend& bk = dispatch(g);
    std::vector<Tensor> grads;
    grads.push_back(need_dx ? bk.linear_backward_data(g, wt) : Tensor());
    // dW straight into the weight's gradient destination, if it has one: its f32 slot, or its
    // 16-bit wire slot scaled, where the backend can write that.
    WeightGradInto into;
    if (g.device() == Device::cpu() && g.dtype() == DType::kF32) {
      const ScaledDestination scaled = scaled_gradient_destination(1, wt.shape());
      into = {gradient_destination(1, wt.shape()), scaled.tensor, scaled.scale};
    }
    WeightGrads wg = bk.linear_backward_weights(g, xt, has_bias, into);
    grads.push_back(std::move(wg.dw));
    if (has_bias) grads.push_back(std::move(wg.db));
    return grads;
  });
}

}  // namespace dtrain::ops
