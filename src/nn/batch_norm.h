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
  const ops::BatchNormState& state() const { return state_; }

 private:
  std::int64_t channels_;
  ops::BatchNormState state_;
  Variable weight_, bias_;
};

}  // namespace dtrain
