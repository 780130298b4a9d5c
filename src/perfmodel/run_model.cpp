#include "perfmodel/run_model.h"

#include <fmt/format.h>

#include <map>

#include "core/error.h"

namespace dtrain::perf {
namespace {

// Each worker evaluates its shard of the test set: forward passes at the training rate.
double eval_seconds(const StepPrediction& step, const DatasetInfo& d, const RunConfig& c) {
  const std::int64_t shard = (d.test_samples + c.workers - 1) / c.workers;
  return static_cast<double>(shard) * step.phases.forward / static_cast<double>(c.batch_per_worker);
}

// The population pass of --bn-stats population (train/bn_statistics.h): chunks of a micro-batch,
// chunk j on worker j mod W, each a forward pass at the training rate (the step's forward wall
// time over its micro-batches); its sums over the workers are a few doubles per layer, left out.
double population_seconds(const StepPrediction& step, const DatasetInfo& d, const RunConfig& c) {
  if (c.population_chunks == 0) return 0;
  const std::int64_t micro = c.batch_per_worker / c.accumulate;
  const std::int64_t all = (d.train_samples + micro - 1) / micro;
  const std::int64_t chunks = c.population_chunks < 0 ? all : std::min(all, c.population_chunks);
  const std::int64_t mine = (chunks + c.workers - 1) / c.workers;
  return static_cast<double>(mine) * step.phases.forward / c.accumulate;
}

}  // namespace

RunPrediction predict_run(const Workload& w, const DatasetInfo& dataset, const Profile& profile, RunConfig c,
                          int epochs) {
  if (epochs < 1) throw InputError(fmt::format("--epochs must be >= 1, got {}", epochs));
  validate(c);
  c.disk_bytes_per_sample = dataset.disk_bytes_per_sample;
  const std::int64_t global = static_cast<std::int64_t>(c.workers) * c.batch_per_worker;
  RunPrediction r;
  r.config = c;
  r.epochs = epochs;
  r.steps_per_epoch = dataset.train_samples / global;
  if (r.steps_per_epoch == 0) {
    throw InputError(
        fmt::format("{} workers x batch {} = {} samples per step is more than the {} training samples "
                    "of {}; use fewer workers or a smaller batch",
                    c.workers, c.batch_per_worker, global, dataset.train_samples, dataset.name));
  }
  r.step = predict_step(w, profile, c);
  r.eval_seconds = eval_seconds(r.step, dataset, c);
  r.population_seconds = population_seconds(r.step, dataset, c);
  r.epoch_seconds = static_cast<double>(r.steps_per_epoch) * r.step.step + r.eval_seconds + r.population_seconds;
  r.total_seconds = epochs * r.epoch_seconds;
  r.device_hours = c.workers * r.total_seconds / 3600.0;

  RunConfig one = c;
  one.workers = 1;
  one.exchange = Exchange::kAllreduce;  // one worker trains alone: no servers, no allreduce
  one.sync = Sync::kBsp;
  one.double_buffering = false;
  one.slowdown = WorkerSpeeds{};  // the baseline is one worker at its normal speed
  const std::int64_t one_steps = dataset.train_samples / c.batch_per_worker;
  const StepPrediction alone = predict_step(w, profile, one);
  r.single_worker_epoch_seconds = static_cast<double>(one_steps) * alone.step + eval_seconds(alone, dataset, one) +
                                  population_seconds(alone, dataset, one);
  r.speedup = r.single_worker_epoch_seconds / r.epoch_seconds;
  r.efficiency = r.speedup / c.workers;
  return r;
}

std::vector<std::size_t> best_per_worker_count(const std::vector<RunPrediction>& runs) {
  std::map<int, std::size_t> best;
  for (std::size_t i = 0; i < runs.size(); ++i) {
    auto [it, fresh] = best.emplace(runs[i].config.workers, i);
    if (!fresh && runs[i].epoch_seconds < runs[it->second].epoch_seconds) it->second = i;
  }
  std::vector<std::size_t> out;
  out.reserve(best.size());
  for (const auto& [workers, i] : best) out.push_back(i);
  return out;
}

}  // namespace dtrain::perf
