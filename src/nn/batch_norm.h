// Batch normalisation layer with running statistics (PyTorch's BatchNorm2d / BatchNorm1d).
#pragma once

#include "autograd/ops/norm.h"
#include "nn/module.h"

namespace dtrain {

class BatchNorm : public Module {
 public:
  explicit BatchNorm(std::int64_t channels, double eps = 1e-5, double momentum = 0.1);
  Variable forward(const Variable& x) override;

  std::int64_t channels() const { return channels_; }
  // Off: normalise with batch statistics in training and evaluation alike, keep no moving
  // averages (for large-batch training where the averages lag the weights).
  void set_track_running_stats(bool on) { state_.track_running_stats = on; }
  // Ghost batch norm: statistics over groups of `samples` in training (0: the whole batch).
  void set_group(std::int64_t samples) { state_.group = samples; }
  // Synchronized batch norm: training statistics summed over the ranks `sum` spans (empty: off).
  void set_sync(ops::SumOverRanks sum) { state_.sync = std::move(sum); }
  // 1: the running statistics are the last training batch's (batch norm without moving averages).
  void set_momentum(double momentum) { state_.momentum = momentum; }
  // Set: training adds each batch's moments to `moments` and leaves the running statistics alone.
  void collect_moments(ops::BatchNormMoments* moments) { state_.moments = moments; }
  const ops::BatchNormState& state() const { return state_; }
  Tensor& running_mean() { return state_.running_mean; }
  Tensor& running_var() { return state_.running_var; }

 private:
  std::int64_t channels_;
  ops::BatchNormState state_;
  Variable weight_, bias_;
};

// Every batch-norm layer of `model`, parents' before children's.
std::vector<BatchNorm*> batch_norms(Module& model);

}  // namespace dtrain
