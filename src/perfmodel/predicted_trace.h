// `dtrain predict --trace FILE`: the predicted timeline of a run (step_model.h's steady-state step,
// repeated) in the Chrome trace format a measured run writes (core/trace_format.h,
// `dtrain train --trace`), so that the two open side by side: the same lanes (compute,
// communication, data loader), the same names (layer paths, "bucket k", "update", "wait for data",
// "wait for gradients"; the model's own "wait for the slowest worker") and categories, one process per rank (every rank
// predicts alike; at most `max_ranks` are written).
#pragma once

#include <nlohmann/json.hpp>
#include <vector>

#include "core/trace_format.h"
#include "perfmodel/step_model.h"

namespace dtrain::perf {

std::vector<TraceEvent> predicted_trace_events(const StepPrediction& step, int workers, int steps, int max_ranks = 8);
nlohmann::json predicted_trace(const StepPrediction& step, int workers, int steps,
                               const nlohmann::json& other_data = nlohmann::json::object());

}  // namespace dtrain::perf
