#include "autograd/ops/elementwise.h"

#include "tensor/backend.h"

namespace dtrain::ops {

Variable add(const Variable& a, const Variable& b) {
  check_same_shape(a.data(), b.data(), "add");
  Tensor y = dispatch(a.data()).add_activation(a.data(), b.data());
  const bool bf16 = y.dtype() == DType::kBF16;
  Variable out = Variable::from_op(std::move(y), "add", {a, b}, [](const Tensor& g) {
    return std::vector<Tensor>{g, g};
  });
  // A bf16 gradient passes through as it is, to the bf16 nodes that made the summands.
  if (bf16 && out.grad_fn()) out.grad_fn()->reads_bf16_gradient = true;
  return out;
}

Variable mul(const Variable& a, const Variable& b) {
  check_same_shape(a.data(), b.data(), "mul");
  const Tensor ta = f32_operand(a.data()), tb = f32_operand(b.data());
  Tensor y = dispatch(ta).mul(ta, tb);
  return Variable::from_op(std::move(y), "mul", {a, b}, [ta, tb](const Tensor& g) {
    return std::vector<Tensor>{dispatch(g).mul(g, tb.to_layout(g.layout())),
                               dispatch(g).mul(g, ta.to_layout(g.layout()))};
  });
}

Variable scale(const Variable& x, double alpha) {
  Tensor y = f32_operand(x.data()).clone();
  dispatch(y).scale(y, alpha);
  return Variable::from_op(std::move(y), "scale", {x}, [alpha](const Tensor& g) {
    Tensor d = g.clone();
    dispatch(d).scale(d, alpha);
    return std::vector<Tensor>{d};
  });
}

Variable relu(const Variable& x) {
  Tensor y = dispatch(x.data()).relu_forward_activation(x.data());
  Variable out = Variable::from_op(
      y, "relu", {x}, [y](const Tensor& g) { return std::vector<Tensor>{dispatch(g).relu_backward(y, g)}; });
  // A bf16 ReLU masks a bf16 gradient (a convolution's or batch norm's dx) in bf16.
  if (y.dtype() == DType::kBF16 && out.grad_fn()) out.grad_fn()->reads_bf16_gradient = true;
  return out;
}

Variable dropout(const Variable& x, double p, std::uint64_t seed) {
  if (p < 0 || p >= 1) throw InputError(fmt::format("dropout probability must be in [0, 1), got {}", p));
  if (p == 0) return x;
  const Tensor xt = f32_operand(x.data());
  Tensor mask = dispatch(xt).dropout_mask(x.shape(), 1 - p, seed).to(xt.dtype()).to_layout(xt.layout());
  Tensor y = dispatch(xt).mul(xt, mask);
  return Variable::from_op(std::move(y), "dropout", {x}, [mask](const Tensor& g) {
    return std::vector<Tensor>{dispatch(g).mul(g, mask.to_layout(g.layout()))};
  });
}

}  // namespace dtrain::ops
