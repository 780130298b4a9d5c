// Batch normalisation (Ioffe & Szegedy 2015).
#pragma once

#include "autograd/variable.h"

namespace dtrain::ops {

struct BatchNormState {
  Tensor running_mean;  // [C], updated in place in training mode
  Tensor running_var;   // [C], unbiased estimate, as PyTorch keeps it
  double momentum = 0.1;  // running = (1 - momentum) * running + momentum * batch statistic
  double eps = 1e-5;
  // false: training normalises with batch statistics and leaves the running ones alone, and
  // evaluation also uses batch statistics (batch norm without moving averages).
  bool track_running_stats = true;
};

// Training: normalise with the batch statistics over (N, H, W) and update the running ones.
// Evaluation: normalise with the running statistics (no gradient is recorded through them).
Variable batch_norm(const Variable& x, const Variable& gamma, const Variable& beta, BatchNormState& state,
                    bool training);

}  // namespace dtrain::ops
