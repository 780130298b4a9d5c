#include "autograd/ops/norm.h"

#include "tensor/backend.h"

namespace dtrain::ops {

Variable batch_norm(const Variable& x, const Variable& gamma, const Variable& beta, BatchNormState& state,
                    bool training) {
  const Tensor& xt = x.data();
  if ((xt.dim() != 2 && xt.dim() != 4) || gamma.data().numel() != xt.size(1)) {
    throw ShapeError(fmt::format("batch_norm: input {} does not fit {} channels (need [N, C] or [N, C, H, W])",
                                 x.shape(), gamma.data().numel()));
  }
  Backend& be = dispatch(xt);
  if (!training && state.track_running_stats) {
    Tensor y = be.batch_norm_forward_inference(xt, gamma.data(), beta.data(), state.running_mean, state.running_var,
                                               state.eps);
    return Variable::from_op(std::move(y), "batch_norm_eval", {}, nullptr);
  }
  BatchNormForward fwd = be.batch_norm_forward_training(xt, gamma.data(), beta.data(), state.eps);
  if (training && state.track_running_stats) {
    const double m = static_cast<double>(xt.numel()) / static_cast<double>(xt.size(1));  // samples per channel
    const double unbias = m > 1 ? m / (m - 1) : 1.0;
    Backend& sb = dispatch(state.running_mean);
    sb.scale(state.running_mean, 1 - state.momentum);
    sb.axpy(state.momentum, fwd.mean, state.running_mean);
    sb.scale(state.running_var, 1 - state.momentum);
    sb.axpy(state.momentum * unbias, fwd.var, state.running_var);
  }
  return Variable::from_op(fwd.y, "batch_norm", {x, gamma, beta},
                           [xt, gt = gamma.data(), mean = fwd.mean, var = fwd.var, eps = state.eps](const Tensor& dy) {
                             BatchNormGrads g = dispatch(dy).batch_norm_backward(dy, xt, gt, mean, var, eps);
                             return std::vector<Tensor>{g.dx, g.dgamma, g.dbeta};
                           });
}

}  // namespace dtrain::ops
