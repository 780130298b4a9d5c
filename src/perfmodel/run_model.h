// From one step to a whole run: steps per epoch (as the sampler counts them: whole global
// batches only), the evaluation after each epoch (the test set sharded over the workers, forward
// passes only, as the trainer's evaluator does), time per epoch and to E epochs, speedup and
// efficiency over one worker with the same per-worker batch (weak scaling, as Goyal et al. 2017
// scale), and device-hours.
#pragma once

#include <string>
#include <vector>

#include "perfmodel/step_model.h"

namespace dtrain::perf {

struct RunPrediction {
  RunConfig config;
  StepPrediction step;
  std::int64_t steps_per_epoch = 0;
  int epochs = 0;
  double eval_seconds = 0;        // per epoch, included in epoch_seconds
  double population_seconds = 0;  // --bn-stats population's pass per epoch, included in epoch_seconds
  double epoch_seconds = 0, total_seconds = 0;
  double single_worker_epoch_seconds = 0;  // the baseline of speedup
  double speedup = 0, efficiency = 0;
  double device_hours = 0;  // workers x total time (servers not counted)
};

// Throws InputError when not one global batch fits in the dataset.
RunPrediction predict_run(const Workload& workload, const DatasetInfo& dataset, const Profile& profile,
                          RunConfig config, int epochs);

// The fastest prediction per worker count among `runs` (ties: the first); indices into runs.
std::vector<std::size_t> best_per_worker_count(const std::vector<RunPrediction>& runs);

}  // namespace dtrain::perf
