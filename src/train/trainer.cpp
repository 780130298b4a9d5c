#include "train/trainer.h"

#include "core/timer.h"

namespace dtrain {

Trainer::Trainer(Updater& updater, Optimizer& optimizer, const LrSchedule& schedule, const Dataset& train_data,
                 const Sampler& sampler, TrainerOptions options)
    : updater_(updater),
      optimizer_(optimizer),
      schedule_(schedule),
      data_(train_data),
      sampler_(sampler),
      options_(std::move(options)) {}

TrainerState Trainer::run() {
  TrainerState s;
  s.epochs = options_.epochs;
  s.world_size = options_.world_size;
  s.iterations_per_epoch = sampler_.batches_per_epoch();
  if (sampler_.num_samples() != data_.size()) {
    throw InputError(fmt::format("sampler is for {} samples but dataset {} has {}", sampler_.num_samples(), data_.name,
                                 data_.size()));
  }
  s.iteration = options_.start_iteration > 0 ? options_.start_iteration : options_.start_epoch * s.iterations_per_epoch;
  s.epoch = s.iteration / s.iterations_per_epoch;
  std::int64_t skip = s.iteration % s.iterations_per_epoch;  // steps of a resumed epoch already done
  s.epoch_iteration = skip;
  if (s.iteration > 0) {
    // The rate of the step before the first one run here, for momentum SGD's correction.
    optimizer_.set_applied_lr(lr_at_iteration(schedule_, s.iteration - 1, s.iterations_per_epoch));
  }
  s.start_time = now_seconds();
  for (auto& e : extensions_) e->on_start(s);
  for (; s.epoch < s.epochs; ++s.epoch) {
    if (skip == 0) {
      s.epoch_iteration = 0;
      s.epoch_loss_sum = 0;
      s.epoch_correct = s.epoch_samples = 0;
    }
    s.epoch_totals_global = false;
    s.epoch_times = {};
    s.last_eval.reset();
    s.record = nlohmann::json::object();
    Stopwatch epoch_clock;
    auto batches = sampler_.epoch_batches(s.epoch);
    batches.erase(batches.begin(), batches.begin() + skip);
    skip = 0;
    Loader loader(data_, std::move(batches), s.epoch, options_.loader);
    while (auto batch = loader.next()) {
      const double progress = static_cast<double>(s.epoch) +
                              static_cast<double>(s.epoch_iteration) / static_cast<double>(s.iterations_per_epoch);
      s.lr = schedule_.lr(progress);
      optimizer_.set_lr(s.lr);
      optimizer_.set_progress(progress);
      s.last = updater_.update(*batch, s.iteration);
      s.last.times.data = loader.last_wait_seconds();
      s.epoch_times += s.last.times;
      s.epoch_loss_sum += s.last.loss;
      s.epoch_correct += s.last.correct;
      s.epoch_samples += s.last.samples;
      ++s.epoch_iteration;
      ++s.iteration;
      for (auto& e : extensions_) e->on_iteration(s);
      if (!s.stopped_by.empty()) break;
    }
    if (!s.stopped_by.empty()) break;
    updater_.flush();
    s.epoch_train_seconds = epoch_clock.seconds();
    if (options_.sum_across_ranks) {
      std::vector<double> totals{s.epoch_loss_sum, static_cast<double>(s.epoch_correct),
                                 static_cast<double>(s.epoch_samples)};
      options_.sum_across_ranks(totals);
      s.epoch_loss_sum = totals[0] / s.world_size;
      s.epoch_correct = static_cast<std::int64_t>(totals[1]);
      s.epoch_samples = static_cast<std::int64_t>(totals[2]);
      s.epoch_totals_global = true;
    }
    for (auto& e : extensions_) e->on_epoch_end(s);
    if (!s.stopped_by.empty()) break;
  }
  for (auto& e : extensions_) e->on_finish(s);
  return s;
}

}  // namespace dtrain
