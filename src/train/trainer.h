// The training loop (Chainer's Trainer): epochs of batches from a loader, one Updater step per
// batch, the learning rate set from the schedule before every step, and Extensions (evaluation,
// the metrics log, the progress display, checkpoints) called at their points. The loop itself
// knows nothing of processes, devices or logs.
#pragma once

#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "data/loader.h"
#include "optim/optimizer.h"
#include "optim/schedule.h"
#include "train/evaluator.h"
#include "train/updater.h"

namespace dtrain {

// Its implicit noexcept move runs nlohmann::json's, which clang-tidy cannot see never throws.
// NOLINTNEXTLINE(bugprone-exception-escape)
struct TrainerState {
  std::int64_t epochs = 0;           // to train
  std::int64_t epoch = 0;            // current, 0-based
  std::int64_t iteration = 0;        // global step, 0-based (steps done so far)
  std::int64_t epoch_iteration = 0;  // steps done in this epoch
  std::int64_t iterations_per_epoch = 0;
  int world_size = 1;  // processes training together
  double lr = 0;
  StepResult last;  // the latest step
  // This epoch so far: this rank's during the epoch, all ranks' (summed by the trainer's
  // sum_across_ranks) when on_epoch_end runs.
  double epoch_loss_sum = 0;  // sum of per-step mean losses (averaged over ranks)
  std::int64_t epoch_correct = 0, epoch_samples = 0;
  bool epoch_totals_global = false;  // epoch_correct/samples cover all ranks
  PhaseTimes epoch_times;
  double epoch_train_seconds = 0;  // wall time of the epoch's steps, evaluation excluded
  double start_time = 0;           // of run()
  std::optional<EvalResult> last_eval;
  nlohmann::json record;  // the epoch's log record, filled by extensions
  // Set by an extension (the checkpointer, on a stop signal) to end the run after this step's
  // or this epoch's extensions: the signal's name. Empty: the run goes on.
  std::string stopped_by;

  double epoch_mean_loss() const {
    return epoch_iteration > 0 ? epoch_loss_sum / static_cast<double>(epoch_iteration) : 0;
  }
  double epoch_accuracy() const {
    return epoch_samples > 0 ? static_cast<double>(epoch_correct) / static_cast<double>(epoch_samples) : 0;
  }
  // Samples per second over all ranks.
  double epoch_samples_per_second() const {
    const std::int64_t all = epoch_totals_global ? epoch_samples : epoch_samples * world_size;
    return epoch_train_seconds > 0 ? static_cast<double>(all) / epoch_train_seconds : 0;
  }
};

class Extension {
 public:
  virtual ~Extension() = default;
  virtual void on_start(TrainerState&) {}
  virtual void on_iteration(TrainerState&) {}
  // Called in the order extensions were added (evaluation first, then what reports it).
  virtual void on_epoch_end(TrainerState&) {}
  virtual void on_finish(TrainerState&) {}
};

struct TrainerOptions {
  std::int64_t epochs = 1;
  std::int64_t start_epoch = 0;  // resume
  // Resume mid-epoch: global steps already done (overrides start_epoch). The epoch's steps done
  // are skipped; its totals so far are what the extensions' on_start set (a checkpoint's).
  std::int64_t start_iteration = 0;
  int world_size = 1;
  LoaderOptions loader;
  // Sums the epoch's loss, correct and sample counts over ranks before the extensions run.
  SumAcrossRanks sum_across_ranks;
};

class Trainer {
 public:
  Trainer(Updater& updater, Optimizer& optimizer, const LrSchedule& schedule, const Dataset& train_data,
          const Sampler& sampler, TrainerOptions options);
  void add_extension(std::unique_ptr<Extension> extension) { extensions_.push_back(std::move(extension)); }
  // Runs the remaining epochs and returns the final state.
  TrainerState run();

 private:
  Updater& updater_;
  Optimizer& optimizer_;
  const LrSchedule& schedule_;
  const Dataset& data_;
  const Sampler& sampler_;
  TrainerOptions options_;
  std::vector<std::unique_ptr<Extension>> extensions_;
};

}  // namespace dtrain
