// Presenting predictions: the table `dtrain predict` prints, its JSON form for tools, and the
// human-readable durations both use.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "perfmodel/run_model.h"

namespace dtrain::perf {

// "412 us", "231.9 ms", "12.4 s", "19.3 min", "29.0 h", "12.5 d".
std::string format_seconds(double seconds);

// One row per prediction: workers, exchange, compute, data and communication per step (the
// exposed part in brackets), the wait for the slowest worker, step, epoch, all epochs, speedup,
// efficiency, device-hours and the bottleneck; then the best exchange per worker count when there
// is a choice.
std::string format_table(const std::vector<RunPrediction>& runs);

nlohmann::json run_to_json(const RunPrediction& r);
// {"runs": [...], "best": [{"workers", "exchange"}]}
nlohmann::json runs_to_json(const std::vector<RunPrediction>& runs);

// "p100+ib-fdr: NVIDIA P100 x1 per node (...), nodes joined by ...": a profile in one line.
std::string describe_profile(const Profile& p);

}  // namespace dtrain::perf
