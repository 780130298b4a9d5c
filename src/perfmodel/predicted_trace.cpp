#include "perfmodel/predicted_trace.h"

#include <fmt/format.h>

#include <algorithm>

#include "core/error.h"

namespace dtrain::perf {
namespace {

TraceLane lane_of(const std::string& lane) {
  if (lane == "comm" || lane == "servers") return TraceLane::kComm;
  if (lane == "loader") return TraceLane::kLoader;
  return TraceLane::kCompute;
}

}  // namespace

std::vector<TraceEvent> predicted_trace_events(const StepPrediction& s, int workers, int steps, int max_ranks) {
  if (steps < 1) throw InputError(fmt::format("--trace-steps must be >= 1, got {}", steps));
  std::vector<TraceEvent> out;
  const int ranks = std::clamp(workers, 1, max_ranks);
  // Where the compute thread waits: for data before forward, for the buckets before the update
  // (the model's "wait for the slowest worker" lies inside that wait).
  double first_compute = s.step, backward_end = 0, update_start = s.step;
  for (const TimelineEvent& e : s.timeline) {
    if (e.lane != "compute") continue;
    if (e.category == "forward" || e.category == "backward") {
      first_compute = std::min(first_compute, e.start);
      backward_end = std::max(backward_end, e.start + e.duration);
    }
    if (e.category == "update") update_start = e.start;
  }
  for (int r = 0; r < ranks; ++r) {
    for (int k = 0; k < steps; ++k) {
      const double t0 = k * s.step;
      const nlohmann::json args = {{"predicted", true}};
      out.push_back({fmt::format("step {}", k + 1), "step", r, TraceLane::kCompute, t0, s.step, args});
      if (s.phases.data > 0) out.push_back({"wait for data", "data", r, TraceLane::kCompute, t0, first_compute, args});
      if (update_start - backward_end > 1e-9) {
        out.push_back({"wait for gradients", "wait", r, TraceLane::kCompute, t0 + backward_end,
                       update_start - backward_end, args});
      }
      for (const TimelineEvent& e : s.timeline) {
        nlohmann::json a = args;
        if (e.category == "allreduce") a["bucket"] = std::stoi(e.name.substr(e.name.find(' ') + 1));
        out.push_back({e.name, e.category, r, lane_of(e.lane), t0 + e.start, e.duration, a});
      }
    }
  }
  return out;
}

nlohmann::json predicted_trace(const StepPrediction& step, int workers, int steps, const nlohmann::json& other_data) {
  return chrome_trace(predicted_trace_events(step, workers, steps), "predicted rank", other_data);
}

}  // namespace dtrain::perf
