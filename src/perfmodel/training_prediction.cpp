#include "perfmodel/training_prediction.h"

#include <fmt/format.h>

#include "perfmodel/report.h"
#include "perfmodel/workload.h"

namespace dtrain::perf {

nlohmann::json prediction_json(const StepPrediction& s) {
  nlohmann::json buckets = nlohmann::json::array();
  for (const BucketTiming& b : s.buckets) {
    buckets.push_back({{"elements", b.elements},
                       {"ready_s", b.ready},
                       {"start_s", b.start},
                       {"end_s", b.end},
                       {"allreduce_s", b.allreduce}});
  }
  return {{"step_s", s.step},
          {"compute_s", s.compute},
          {"comm_s", s.comm},
          {"comm_allreduce_s", s.comm_allreduce},
          {"comm_latency_s", s.comm_latency},
          {"straggler_s", s.straggler},
          {"turns", s.turns},
          {"data_s", s.data},
          {"bottleneck", s.bottleneck},
          {"phases_s", s.phases},
          {"buckets", buckets}};
}

StepPrediction prediction_from_json(const nlohmann::json& j) {
  StepPrediction s;
  s.step = j.value("step_s", 0.0);
  s.compute = j.value("compute_s", 0.0);
  s.comm = j.value("comm_s", 0.0);
  s.comm_allreduce = j.value("comm_allreduce_s", 0.0);
  s.comm_latency = j.value("comm_latency_s", 0.0);
  s.straggler = j.value("straggler_s", 0.0);
  s.turns = j.value("turns", false);
  s.data = j.value("data_s", 0.0);
  s.bottleneck = j.value("bottleneck", "");
  if (j.contains("phases_s")) s.phases = j["phases_s"].get<PhaseTimes>();
  for (const auto& b : j.value("buckets", nlohmann::json::array())) {
    s.buckets.push_back({b.value("elements", std::int64_t{0}), b.value("ready_s", 0.0), b.value("start_s", 0.0),
                         b.value("end_s", 0.0), b.value("allreduce_s", 0.0)});
  }
  return s;
}

nlohmann::json TrainingPlan::log_fields() const {
  nlohmann::json j = {
      {"profile", {{"spec", profile_spec}, {"name", profile.name}, {"description", profile.description}}},
      {"predicted", prediction_json(prediction)}};
  if (choice) {
    nlohmann::json alts = nlohmann::json::array();
    for (const Alternative& a : choice->alternatives) {
      alts.push_back({{"allreduce", comm::algorithm_name(a.algorithm)},
                      {"bucket_mb", static_cast<double>(a.bucket_bytes) / (1 << 20)},
                      {"step_s", a.step}});
    }
    j["auto"] = {{"allreduce", comm::algorithm_name(config.algorithm)},
                 {"bucket_mb", static_cast<double>(config.bucket_bytes) / (1 << 20)},
                 {"alternatives", alts}};
  }
  return j;
}

TrainingPlan plan_training(const std::string& profile_spec, Module& model, const Shape& sample_shape,
                           const std::string& model_name, RunConfig config, bool choose_algorithm, bool choose_bucket) {
  TrainingPlan plan;
  plan.profile_spec = profile_spec;
  plan.profile = load_profile(profile_spec);
  const Workload w = describe_model(model, sample_shape, model_name);
  config.disk_bytes_per_sample = 0;
  if (choose_algorithm || choose_bucket) {
    AutoChoice c = choose_by_prediction(w, plan.profile, config, choose_algorithm, choose_bucket);
    plan.config = c.chosen;
    plan.prediction = c.prediction;
    plan.choice = std::move(c);
  } else {
    plan.config = config;
    plan.prediction = predict_step(w, plan.profile, config);
  }
  return plan;
}

std::optional<TrainingPlan> plan_for_train(const std::string& profile_spec, Module& model, const Shape& sample_shape,
                                           const std::string& model_name, int workers, std::int64_t batch,
                                           DataParallelConfig& dp, bool auto_algorithm, bool auto_bucket,
                                           std::size_t chunk_bytes) {
  if (profile_spec.empty()) return std::nullopt;
  RunConfig c;
  c.workers = workers;
  c.batch_per_worker = batch;
  c.algorithm = dp.algorithm;
  c.comm_dtype = dp.comm_dtype;
  c.bucket_bytes = dp.bucket_bytes;
  c.double_buffering = dp.double_buffering;
  c.accumulate = dp.accumulate;
  c.chunk_bytes = chunk_bytes;
  const bool many = workers > 1;
  TrainingPlan plan =
      plan_training(profile_spec, model, sample_shape, model_name, c, auto_algorithm && many, auto_bucket && many);
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
