// What `dtrain train --profile FILE` adds to a run: the model's prediction of the very run being
// trained (its layers, its ranks, batch, algorithm, wire type, buckets, double buffering and
// accumulation), "auto" settings resolved by it (perfmodel/auto_choice.h), and an extension that prints
// predicted beside measured time per step at each epoch's end and logs both.
//
// Parameter-server runs: the prediction is of one global step (W worker gradients), which the
// servers' measured global steps per second (ps/run_stats.h) are compared with at the end; the
// per-epoch line compares it with worker 0's own step.
//
// In the metrics log, the config record gains "profile" (its name and file), "predicted" (the
// step prediction: prediction_json) and "auto" (what was chosen among which alternatives); each
// epoch record gains "predicted_step_s" and "measured_step_s" (the epoch's training seconds over
// its steps, evaluation excluded). `dtrain explain` reads them back.
#pragma once

#include <optional>
#include <string>

#include "parallel/data_parallel.h"
#include "perfmodel/training_plan.h"
#include "train/trainer.h"

namespace dtrain::perf {

// The parameter-server side of a run (dtrain train --mode ps), for its prediction.
struct ParameterServerShape {
  int servers = 1;
  Sync sync = Sync::kBsp;
  int staleness = 0;  // SSP's bound
};

// dtrain train's call: nothing when `profile_spec` is empty; otherwise the plan of `workers`
// workers training with `dp` (exchanging through parameter servers when `ps` is given, and
// slowed on purpose as `slowdown` says), choosing the algorithm when auto_algorithm and the
// bucket size when auto_bucket (allreduce with more than one worker), and writing the choice
// back into `dp`; the matrix layers priced in `precision` (training_plan.h).
std::optional<TrainingPlan> plan_for_train(const std::string& profile_spec, Module& model, const Shape& sample_shape,
                                           const std::string& model_name, int workers, std::int64_t batch,
                                           DataParallelConfig& dp, bool auto_algorithm, bool auto_bucket,
                                           std::size_t chunk_bytes = 0,
                                           const std::optional<ParameterServerShape>& ps = std::nullopt,
                                           const WorkerSpeeds& slowdown = {}, const std::string& precision = "f32");

class PredictionReport : public Extension {
 public:
  // print: write the line to stdout (rank 0).
  PredictionReport(StepPrediction prediction, bool print) : prediction_(std::move(prediction)), print_(print) {}
  void on_epoch_end(TrainerState& s) override;

 private:
  StepPrediction prediction_;
  bool print_;
};

}  // namespace dtrain::perf
