// The model's prediction of one training run from its model and configuration: the plan
// `dtrain train --profile` (calibration/training_prediction.h) and `dtrain explain` share, and the
// step prediction as the metrics log keeps it ("predicted" in the config record).
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "nn/module.h"
#include "perfmodel/auto_choice.h"
#include "perfmodel/profile.h"
#include "perfmodel/step_model.h"
#include "tensor/shape.h"

namespace dtrain::perf {

// The step prediction as the log keeps it: step_s, compute_s, comm_s, comm_allreduce_s,
// comm_latency_s, straggler_s, data_s, bottleneck, phases_s {data, forward, backward, comm
// (straggler_s included), update}, buckets.
nlohmann::json prediction_json(const StepPrediction& s);
// Back from the log (fields absent in older logs are 0).
StepPrediction prediction_from_json(const nlohmann::json& j);

struct TrainingPlan {
  Profile profile;
  std::string profile_spec;
  RunConfig config;  // with "auto" resolved
  StepPrediction prediction;
  std::optional<AutoChoice> choice;   // when something was "auto"
  nlohmann::json log_fields() const;  // profile, predicted, auto: merged into the config record
};

// Loads the profile, describes the model and predicts; chooses the algorithm when
// choose_algorithm and the bucket size when choose_bucket. Data come from memory (the loader of
// dtrain train holds the dataset in RAM), so no disk bytes are charged. `precision`: the matrix
// layers' arithmetic, priced at the profile's rates for it (profile.h: at_precision; InputError
// naming the missing field where the profile has none).
TrainingPlan plan_training(const std::string& profile_spec, Module& model, const Shape& sample_shape,
                           const std::string& model_name, RunConfig config, bool choose_algorithm, bool choose_bucket,
                           const std::string& precision = "f32");

}  // namespace dtrain::perf
