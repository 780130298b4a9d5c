#include "calibration/training_prediction.h"

#include <fmt/format.h>

#include "perfmodel/report.h"

namespace dtrain::perf {

std::optional<TrainingPlan> plan_for_train(const std::string& profile_spec, Module& model, const Shape& sample_shape,
                                           const std::string& model_name, int workers, std::int64_t batch,
                                           DataParallelConfig& dp, bool auto_algorithm, bool auto_bucket,
                                           std::size_t chunk_bytes, const std::optional<ParameterServerShape>& ps,
                                           const WorkerSpeeds& slowdown, const std::string& precision) {
  if (profile_spec.empty()) return std::nullopt;
  RunConfig c;
  if (ps) {
    c.exchange = Exchange::kParameterServer;
    c.servers = ps->servers;
    c.sync = ps->sync;
    c.staleness = ps->staleness;
  }
  c.slowdown = slowdown;
  c.workers = workers;
  c.batch_per_worker = batch;
  c.algorithm = dp.algorithm;
  c.comm_dtype = dp.comm_dtype;
  c.bucket_bytes = dp.bucket_bytes;
  c.double_buffering = dp.double_buffering;
  c.accumulate = dp.accumulate;
  c.sync_batch_norm = dp.sync_batch_norm;
  c.chunk_bytes = chunk_bytes;
  const bool many = workers > 1 && !ps;
  TrainingPlan plan = plan_training(profile_spec, model, sample_shape, model_name, c, auto_algorithm && many,
                                    auto_bucket && many, precision);
  dp.algorithm = plan.config.algorithm;
  dp.bucket_bytes = plan.config.bucket_bytes;
  return plan;
}

void PredictionReport::on_epoch_end(TrainerState& s) {
  if (s.epoch_iteration <= 0) return;
  const double measured = s.epoch_train_seconds / static_cast<double>(s.epoch_iteration);
  const double predicted = prediction_.step;
  s.record["predicted_step_s"] = predicted;
  s.record["measured_step_s"] = measured;
  if (!print_) return;
  const PhaseTimes& m = s.epoch_times;
  const double n = static_cast<double>(s.epoch_iteration);
  const std::string straggler =
      prediction_.straggler > 0 ? fmt::format(" with {} straggler wait", format_seconds(prediction_.straggler)) : "";
  fmt::print(
      "epoch {}/{} per step: predicted {} (compute {}, exposed comm {}{}), measured {} (compute {}, exposed comm {}): "
      "{:+.1f}%\n",
      s.epoch + 1, s.epochs, format_seconds(predicted),
      format_seconds(prediction_.phases.forward + prediction_.phases.backward + prediction_.phases.update),
      format_seconds(prediction_.phases.comm), straggler, format_seconds(measured),
      format_seconds((m.forward + m.backward + m.update) / n), format_seconds(m.comm / n),
      100 * (predicted - measured) / measured);
  std::fflush(stdout);
}

}  // namespace dtrain::perf
