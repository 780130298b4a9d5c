// Learning-rate schedules as functions of training progress in (fractional) epochs, so that
// warmup advances every iteration as Goyal et al. 2017 prescribe, not once per epoch.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace dtrain {

class LrSchedule {
 public:
  virtual ~LrSchedule() = default;
  virtual double lr(double epoch) const = 0;
};

struct ScheduleConfig {
  std::string name = "cosine";  // constant | step | cosine | slow-start
  double base_lr = 0.05;
  double step_epochs = 30;  // step: multiply by gamma every step_epochs
  double gamma = 0.1;
  double total_epochs = 1;  // cosine: anneal to min_lr over this many epochs; slow-start: its length
  double min_lr = 0;
  double warmup_epochs = 0;  // linear warmup from warmup_start_factor * lr over this many epochs
  double warmup_start_factor = 0.1;
};

// The rate of global step `iteration` with `per_epoch` steps an epoch (the trainer's fractional
// epoch: epoch + step within it / per_epoch).
double lr_at_iteration(const LrSchedule& schedule, std::int64_t iteration, std::int64_t per_epoch);

// Throws InputError listing the valid names for an unknown schedule.
std::unique_ptr<LrSchedule> make_schedule(const ScheduleConfig& config);
const std::vector<std::string>& schedule_names();

}  // namespace dtrain
