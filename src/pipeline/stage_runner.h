// One pipeline stage's part of a training step: it runs its action list (schedule.h) over the
// step's micro-batches, with the differentiable transfers of p2p.h between the stages.
//
// Gradient scale: each micro-batch's loss is the mean over its rows, and the last stage seeds
// each micro-batch's backward with 1/m, so the gradients the stages accumulate are the mean over
// the whole batch, those of one unsplit step (m equal micro-batches). There is no other scaling,
// so accumulation over steps or data-parallel averaging compose with it unchanged.
//
// Batch norm inside a stage normalises each micro-batch with its own statistics and updates
// the running averages once per micro-batch (as torchgpipe without deferred batch norm, and as
// --accumulate does): a pipeline equals one full-batch step exactly only for models without
// batch norm.
#pragma once

#include <cstdint>
#include <vector>

#include "nn/module.h"
#include "pipeline/p2p.h"
#include "pipeline/schedule.h"

namespace dtrain::pipeline {

struct StageConfig {
  ScheduleKind schedule = ScheduleKind::kOneFOneB;
  int stages = 1;
  int stage = 0;
  int micro_batches = 1;
  int previous_rank = -1;  // the transport rank of stage - 1 (unused on the first stage)
  int next_rank = -1;      // and of stage + 1 (unused on the last)
  Shape input_sample;      // this stage's input per sample (stages.h boundary_shapes)
};

// One action as it ran, in seconds from the start of the step.
struct ActionRecord {
  Action action{};
  double start_s = 0, end_s = 0;
};

struct StageStep {
  double loss = 0;                        // the mean of the micro-batches' losses (last stage only)
  std::int64_t correct = 0, samples = 0;  // last stage only
  bool loss_finite = true;                // last stage only: every micro-batch's loss was finite
  int peak_in_flight = 0;                 // the most micro-batches whose activations the stage held at once
  double forward_s = 0, backward_s = 0;   // compute, without the waits
  double wait_s = 0;                      // waiting for activations and gradients
  double seconds = 0;                     // the whole step's part of this stage
  double wall_start = 0;                  // when it began, wall-clock seconds (traces line ranks up by it)
  std::vector<ActionRecord> timeline;
};

class StageRunner {
 public:
  // `stage` is this stage's module; its parameters' gradients accumulate (zero them before).
  StageRunner(Module& stage, P2P& p2p, StageConfig config);

  // The step over `inputs` (read by the first stage) and `labels` (read by the last), both the
  // whole batch, split in micro_batches equal slices: InputError naming both numbers when
  // micro_batches does not divide the batch. A non-finite micro-batch loss does not stop the
  // schedule (the other stages would wait for it): loss_finite says so after the step.
  StageStep run(const Tensor& inputs, const Tensor& labels, double label_smoothing = 0);

  const StageConfig& config() const { return config_; }
  const std::vector<Action>& actions() const { return actions_; }

 private:
  Module& stage_;
  P2P& p2p_;
  StageConfig config_;
  std::vector<Action> actions_;
};

}  // namespace dtrain::pipeline
