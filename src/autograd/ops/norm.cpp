#include "autograd/ops/norm.h"

#include "tensor/backend.h"

namespace dtrain::ops {
namespace {

// running = (1 - momentum) running + momentum * batch statistic, with the groups' statistics
// averaged and the variance unbiased over `count` samples per channel.
void update_running(BatchNormState& state, const detail::NormalizedBatch& fwd) {
  const double unbias = fwd.count > 1 ? fwd.count / (fwd.count - 1) : 1.0;
  const double share = state.momentum / static_cast<double>(fwd.means.size());
  Backend& sb = dispatch(state.running_mean);
  sb.scale(state.running_mean, 1 - state.momentum);
  sb.scale(state.running_var, 1 - state.momentum);
  for (std::size_t j = 0; j < fwd.means.size(); ++j) {
    sb.axpy(share, fwd.means[j], state.running_mean);
    sb.axpy(share * unbias, fwd.vars[j], state.running_var);
  }
}

void add_moments(BatchNormMoments& m, const detail::NormalizedBatch& fwd) {
  for (std::size_t j = 0; j < fwd.means.size(); ++j) {
    const std::vector<double> mu = fwd.means[j].to_vector_f64(), v = fwd.vars[j].to_vector_f64();
    m.sum.resize(mu.size(), 0.0);
    m.sum_sq.resize(mu.size(), 0.0);
    for (std::size_t c = 0; c < mu.size(); ++c) {
      m.sum[c] += fwd.count * mu[c];
      m.sum_sq[c] += fwd.count * (v[c] + mu[c] * mu[c]);
    }
    m.count += fwd.count;
  }
}

}  // namespace

Variable batch_norm(const Variable& x, const Variable& gamma, const Variable& beta, BatchNormState& state,
                    bool training) {
  const Tensor& xd = x.data();
  if ((xd.dim() != 2 && xd.dim() != 4) || gamma.data().numel() != xd.size(1)) {
    throw ShapeError(fmt::format("batch_norm: input {} does not fit {} channels (need [N, C] or [N, C, H, W])",
                                 x.shape(), gamma.data().numel()));
  }
  const bool inference = !training && state.track_running_stats;
  const bool ghost = training && state.group > 0 && state.group < xd.size(0);
  const bool sync = training && state.sync && !ghost;
  // A bf16 input (a bf16 convolution's output) stays bf16 through the plain pass over the batch:
  // its kernels read and write bf16 with f32 statistics and parameters, as PyTorch's CPU autocast
  // runs batch norm in its input's type. Inference, ghost and synchronised batch norm widen it.
  const Tensor xt = inference || ghost || sync ? f32_operand(xd) : xd;
  Backend& be = dispatch(xt);
  if (inference) {
    Tensor y = be.batch_norm_forward_inference(xt, gamma.data(), beta.data(), state.running_mean, state.running_var,
                                               state.eps);
    return Variable::from_op(std::move(y), "batch_norm_eval", {}, nullptr);
  }
  detail::NormalizedBatch fwd;
  if (ghost) {
    fwd = detail::ghost_batch_norm_forward(xt, gamma.data(), beta.data(), state.eps, state.group);
  } else if (sync) {
    fwd = detail::sync_batch_norm_forward(xt, gamma.data(), beta.data(), state.eps, state.sync);
  } else {
    BatchNormForward plain = be.batch_norm_forward_training(xt, gamma.data(), beta.data(), state.eps);
    fwd = {plain.y, {plain.mean}, {plain.var}, static_cast<double>(xt.numel()) / static_cast<double>(xt.size(1))};
  }
  if (training && state.moments != nullptr) {
    add_moments(*state.moments, fwd);
  } else if (training && state.track_running_stats) {
    update_running(state, fwd);
  }
  const Tensor& gt = gamma.data();
  if (ghost) {
    return Variable::from_op(fwd.y, "batch_norm", {x, gamma, beta},
                             [xt, gt, eps = state.eps, means = fwd.means, vars = fwd.vars](const Tensor& dy) {
                               return detail::ghost_batch_norm_backward(dy, xt, gt, eps, means, vars);
                             });
  }
  if (sync) {
    return Variable::from_op(
        fwd.y, "batch_norm", {x, gamma, beta},
        [xt, gt, mean = fwd.means[0], var = fwd.vars[0], eps = state.eps, sum = state.sync](const Tensor& dy) {
          return detail::sync_batch_norm_backward(dy, xt, gt, mean, var, eps, sum);
        });
  }
  Variable out = Variable::from_op(fwd.y, "batch_norm", {x, gamma, beta},
                                   [xt, gt, mean = fwd.means[0], var = fwd.vars[0], eps = state.eps](const Tensor& dy) {
                                     BatchNormGrads g = dispatch(dy).batch_norm_backward(dy, xt, gt, mean, var, eps);
                                     return std::vector<Tensor>{g.dx, g.dgamma, g.dbeta};
                                   });
  // A bf16 batch norm's backward reads dy in bf16 (a bf16 ReLU's dx as it is).
  if (xt.dtype() == DType::kBF16 && out.grad_fn()) out.grad_fn()->reads_bf16_gradient = true;
  return out;
}

}  // namespace dtrain::ops
