// Batch normalisation (Ioffe & Szegedy 2015), with the two ways of choosing the samples its
// statistics come from besides "this rank's batch":
//   - ghost batch norm (Hoffer et al. 2017): the batch is cut into groups of `group` samples, each
//     normalised with its own statistics, so the statistics' sample count is a setting rather
//     than an accident of the per-rank batch (ghost_norm.cpp);
//   - synchronized batch norm (ChainerMN's MultiNodeBatchNormalization, PyTorch's SyncBatchNorm):
//     the statistics of the global batch, summed over ranks in the forward pass and again in the
//     backward pass (sync_norm.cpp).
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "autograd/variable.h"

namespace dtrain::ops {

// Sums a few doubles over all ranks in place, identically on every rank (sync batch norm).
using SumOverRanks = std::function<void(std::vector<double>&)>;

// Sums of a layer's input moments over the batches it saw: per channel, sum over batches of
// count * mean and count * (biased var + mean^2) (precise batch norm: train/bn_statistics.h).
struct BatchNormMoments {
  std::vector<double> sum, sum_sq;
  double count = 0;
};

struct BatchNormState {
  Tensor running_mean;    // [C], updated in place in training mode
  Tensor running_var;     // [C], unbiased estimate, as PyTorch keeps it
  double momentum = 0.1;  // running = (1 - momentum) * running + momentum * batch statistic
  double eps = 1e-5;
  // false: training normalises with batch statistics and leaves the running ones alone, and
  // evaluation also uses batch statistics (batch norm without moving averages).
  bool track_running_stats = true;
  std::int64_t group = 0;  // ghost batch norm: samples per group in training (0: the whole batch)
  SumOverRanks sync;       // set: synchronized batch norm over the ranks it sums over
  // Set: training adds each batch's moments here and leaves the running statistics alone.
  BatchNormMoments* moments = nullptr;
};

// Training: normalise with the batch statistics over (N, H, W) and update the running ones.
// Evaluation: normalise with the running statistics (no gradient is recorded through them).
Variable batch_norm(const Variable& x, const Variable& gamma, const Variable& beta, BatchNormState& state,
                    bool training);

namespace detail {

// What a training forward pass leaves behind: the output and the statistics it normalised with,
// one mean and biased variance per group (one group unless ghost batch norm), each over `count`
// samples per channel.
struct NormalizedBatch {
  Tensor y;
  std::vector<Tensor> means, vars;
  double count = 0;
};
NormalizedBatch ghost_batch_norm_forward(const Tensor& x, const Tensor& gamma, const Tensor& beta, double eps,
                                         std::int64_t group);
std::vector<Tensor> ghost_batch_norm_backward(const Tensor& dy, const Tensor& x, const Tensor& gamma, double eps,
                                              const std::vector<Tensor>& means, const std::vector<Tensor>& vars);
NormalizedBatch sync_batch_norm_forward(const Tensor& x, const Tensor& gamma, const Tensor& beta, double eps,
                                        const SumOverRanks& sync);
std::vector<Tensor> sync_batch_norm_backward(const Tensor& dy, const Tensor& x, const Tensor& gamma, const Tensor& mean,
                                             const Tensor& var, double eps, const SumOverRanks& sync);

}  // namespace detail
}  // namespace dtrain::ops
