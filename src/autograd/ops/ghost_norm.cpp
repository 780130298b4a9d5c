// Ghost batch norm (Hoffer, Hubara and Soudry 2017, "Train longer, generalize better"): a batch of
// N samples is normalised as N / G independent groups of G consecutive samples. Each group is
// an ordinary batch norm over its own (G, H, W); the groups share gamma and beta, whose gradients
// are the sums over the groups. This is what accumulating N / G micro-batches of G computes, in
// one pass.
#include "autograd/ops/norm.h"
#include "tensor/backend.h"

namespace dtrain::ops::detail {

NormalizedBatch ghost_batch_norm_forward(const Tensor& x, const Tensor& gamma, const Tensor& beta, double eps,
                                         std::int64_t group) {
  const std::int64_t n = x.size(0);
  if (group < 2 || n % group != 0) {
    throw ShapeError(fmt::format(
        "ghost batch norm: groups of {} samples do not divide the batch of {}; give --bn-group a divisor of the "
        "per-rank batch (per micro-batch with --accumulate) of at least 2",
        group, n));
  }
  Backend& be = dispatch(x);
  NormalizedBatch out;
  out.y = Tensor::empty(x.shape(), x.dtype(), x.device(), x.layout());
  out.count = static_cast<double>(x.numel() / n * group) / static_cast<double>(x.size(1));
  for (std::int64_t lo = 0; lo < n; lo += group) {
    BatchNormForward f = be.batch_norm_forward_training(x.slice_rows(lo, lo + group), gamma, beta, eps);
    Tensor part = out.y.slice_rows(lo, lo + group);
    be.copy(f.y.to_layout(x.layout()), part);
    out.means.push_back(std::move(f.mean));
    out.vars.push_back(std::move(f.var));
  }
  return out;
}

std::vector<Tensor> ghost_batch_norm_backward(const Tensor& dy_in, const Tensor& x, const Tensor& gamma, double eps,
                                              const std::vector<Tensor>& means, const std::vector<Tensor>& vars) {
  const Tensor dy = dy_in.to_layout(x.layout());
  Backend& be = dispatch(dy);
  const std::int64_t group = x.size(0) / static_cast<std::int64_t>(means.size());
  Tensor dx = Tensor::empty(x.shape(), x.dtype(), x.device(), x.layout());
  Tensor dgamma = Tensor::zeros(gamma.shape(), gamma.dtype()), dbeta = Tensor::zeros(gamma.shape(), gamma.dtype());
  for (std::size_t j = 0; j < means.size(); ++j) {
    const std::int64_t lo = static_cast<std::int64_t>(j) * group;
    BatchNormGrads g = be.batch_norm_backward(dy.slice_rows(lo, lo + group), x.slice_rows(lo, lo + group), gamma,
                                              means[j], vars[j], eps);
    Tensor part = dx.slice_rows(lo, lo + group);
    be.copy(g.dx.to_layout(x.layout()), part);
    dispatch(dgamma).axpy(1.0, g.dgamma, dgamma);
    dispatch(dbeta).axpy(1.0, g.dbeta, dbeta);
  }
  return {dx, dgamma, dbeta};
}

}  // namespace dtrain::ops::detail
