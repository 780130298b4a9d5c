// Synchronized batch norm: every rank normalises with the statistics of the global batch.
//
// Forward: each rank's per-channel count n_r, mean m_r and biased variance v_r become sums
// n_r m_r and n_r (v_r + m_r^2), added over the ranks in double (one sum of 2C + 1 values):
//   mean = sum n_r m_r / M,  var = sum n_r (v_r + m_r^2) / M - mean^2,  M = sum n_r.
// Backward, with xhat = (x - mean) / sqrt(var + eps) and the global sums
// dbeta = sum dy, dgamma = sum dy xhat (a second sum of 2C + 1 values):
//   dx = gamma / sqrt(var + eps) (dy - dbeta / M - xhat dgamma / M).
// The local kernel computes the same with the rank's own sums over n; the difference is affine in
// xhat per channel, gamma / sqrt(var + eps) (a + b xhat) with a = dbeta_r / n - dbeta / M and
// b = dgamma_r / n - dgamma / M, which the inference kernel applies (scale gamma b / sqrt(var +
// eps), shift gamma a / sqrt(var + eps)). gamma and beta get this rank's sums: the data-parallel
// average of the ranks' gradients then equals one process's gradient over the whole batch.
// Cost per layer and step: two sums of 2C + 1 doubles over the ranks.
#include <cmath>

#include "autograd/ops/norm.h"
#include "tensor/backend.h"

namespace dtrain::ops::detail {

NormalizedBatch sync_batch_norm_forward(const Tensor& x, const Tensor& gamma, const Tensor& beta, double eps,
                                        const SumOverRanks& sync) {
  Backend& be = dispatch(x);
  const BatchNormForward local = be.batch_norm_forward_training(x, gamma, beta, eps);
  const auto channels = static_cast<std::size_t>(x.size(1));
  const double n = static_cast<double>(x.numel()) / static_cast<double>(channels);
  const std::vector<double> m = local.mean.to_vector_f64(), v = local.var.to_vector_f64();
  std::vector<double> sums(2 * channels + 1);
  for (std::size_t c = 0; c < channels; ++c) {
    sums[c] = n * m[c];
    sums[channels + c] = n * (v[c] + m[c] * m[c]);
  }
  sums[2 * channels] = n;
  sync(sums);
  const double total = sums[2 * channels];
  std::vector<double> mean(channels), var(channels);
  for (std::size_t c = 0; c < channels; ++c) {
    mean[c] = sums[c] / total;
    var[c] = std::max(0.0, sums[channels + c] / total - mean[c] * mean[c]);
  }
  NormalizedBatch out;
  out.means = {Tensor::from_vector(mean, gamma.shape()).to(gamma.dtype())};
  out.vars = {Tensor::from_vector(var, gamma.shape()).to(gamma.dtype())};
  out.count = total;
  out.y = be.batch_norm_forward_inference(x, gamma, beta, out.means[0], out.vars[0], eps);
  return out;
}

std::vector<Tensor> sync_batch_norm_backward(const Tensor& dy, const Tensor& x, const Tensor& gamma, const Tensor& mean,
                                             const Tensor& var, double eps, const SumOverRanks& sync) {
  Backend& be = dispatch(dy);
  BatchNormGrads local = be.batch_norm_backward(dy, x, gamma, mean, var, eps);
  const auto channels = static_cast<std::size_t>(x.size(1));
  const double n = static_cast<double>(x.numel()) / static_cast<double>(channels);
  const std::vector<double> dgamma = local.dgamma.to_vector_f64(), dbeta = local.dbeta.to_vector_f64();
  std::vector<double> sums(2 * channels + 1);
  for (std::size_t c = 0; c < channels; ++c) {
    sums[c] = dgamma[c];
    sums[channels + c] = dbeta[c];
  }
  sums[2 * channels] = n;
  sync(sums);
  const double total = sums[2 * channels];
  const std::vector<double> g = gamma.to_vector_f64(), vr = var.to_vector_f64();
  std::vector<double> scale(channels), shift(channels);
  for (std::size_t c = 0; c < channels; ++c) {
    const double k = g[c] / std::sqrt(vr[c] + eps);
    scale[c] = k * (dgamma[c] / n - sums[c] / total);
    shift[c] = k * (dbeta[c] / n - sums[channels + c] / total);
  }
  const Tensor correction =
      be.batch_norm_forward_inference(x, Tensor::from_vector(scale, gamma.shape()).to(gamma.dtype()),
                                      Tensor::from_vector(shift, gamma.shape()).to(gamma.dtype()), mean, var, eps);
  be.axpy(1.0, correction.to_layout(local.dx.layout()), local.dx);
  return {local.dx, local.dgamma, local.dbeta};
}

}  // namespace dtrain::ops::detail
