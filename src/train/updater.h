// An Updater performs one training step on one batch (Chainer's Updater). The trainer's loop is
// the same for one process and for data-parallel training; only the updater differs.
#pragma once

#include <cstdint>

#include "core/phase_times.h"
#include "data/loader.h"
#include "nn/module.h"
#include "optim/optimizer.h"

namespace dtrain {

struct StepResult {
  double loss = 0;
  std::int64_t correct = 0;
  std::int64_t samples = 0;
  PhaseTimes times;  // forward, backward, comm, update (the trainer adds data)
};

class Updater {
 public:
  virtual ~Updater() = default;
  // `iteration` is the global step number (0-based), for error messages and seeds.
  virtual StepResult update(const Batch& batch, std::int64_t iteration) = 0;
  // Work still in flight at the end of an epoch or of training (double buffering) is finished.
  virtual void flush() {}
  // The training loss's label smoothing s (ops::softmax_cross_entropy; evaluation stays plain).
  void set_label_smoothing(double s) { label_smoothing_ = s; }
  double label_smoothing() const { return label_smoothing_; }

 private:
  double label_smoothing_ = 0;
};

// Forward, softmax cross-entropy, backward, optimizer step. A loss that is NaN or infinite stops
// training with a NumericError naming the step, before the parameters are touched.
class StandardUpdater : public Updater {
 public:
  StandardUpdater(Module& model, Optimizer& optimizer) : model_(model), optimizer_(optimizer) {}
  StepResult update(const Batch& batch, std::int64_t iteration) override;

 protected:
  // Forward, loss (checked finite), zeroed gradients and backward: the step's part every updater
  // of one worker shares; fills loss, correct, samples and the forward and backward times.
  StepResult forward_backward(const Batch& batch, std::int64_t iteration);
  // The same over `micro_batches` equal slices of the batch, one after the other: the gradients
  // are the sum of the slices' mean gradients (divide by micro_batches for the batch's mean), the
  // loss their mean. InputError when micro_batches does not divide the batch.
  StepResult forward_backward(const Batch& batch, std::int64_t iteration, int micro_batches);

  Module& model_;
  Optimizer& optimizer_;

 private:
  // Forward and loss; returns the loss variable and fills result.loss/correct/samples/forward.
  Variable forward_loss(const Batch& batch, std::int64_t iteration, StepResult& result);
};

}  // namespace dtrain
