#include "perfmodel/training_plan.h"

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
                           const std::string& model_name, RunConfig config, bool choose_algorithm, bool choose_bucket,
                           const std::string& precision) {
  TrainingPlan plan;
  plan.profile_spec = profile_spec;
  plan.profile = load_profile(profile_spec);
  plan.profile.device = at_precision(plan.profile.device, plan.profile.name, precision);
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

}  // namespace dtrain::perf
