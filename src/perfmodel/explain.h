// `dtrain explain LOG`: a measured run (the JSONL metrics log of `dtrain train`) broken down into
// the model's terms, and what limits its scaling.
//
//   measured   per step, from the epoch records (epochs after the first when there are several:
//              the first builds primitives and warms caches): data wait, forward, backward,
//              exposed communication, update, and the loop's own remainder;
//   model      the same terms predicted for the same configuration (the prediction the run logged
//              with --profile, or one made now from --profile), with the communication split into
//              the collectives' latency (rounds x alpha) and bandwidth (bytes x beta, gamma),
//              how much of it backward hid, and the wait for the slowest worker (straggler.h),
//              which the trainer measures as exposed communication;
//   scaling    the model's one-worker step with the same per-worker batch (weak scaling) against
//              the measured step, and the loss split into exposed communication, compute slowed
//              beside the other ranks and the communication thread, data and the rest; the
//              largest part is named, with what would shrink it;
//   layers     with a trace of the run (`dtrain train --trace`), its forward and backward layer by
//              layer beside the model's, summed per layer kind (layer_comparison.h);
//   servers    parameter-server runs: the servers' global steps per second (beside the model's),
//              their busy share, the staleness the rule allowed and each worker's wait, and for a
//              run limited by its wait, whether the servers or the slowest worker hold it.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "core/phase_times.h"
#include "perfmodel/layer_comparison.h"

namespace dtrain::perf {

// Its implicit noexcept move runs nlohmann::json's, which clang-tidy cannot see never throws.
// NOLINTNEXTLINE(bugprone-exception-escape)
struct MeasuredRun {
  nlohmann::json config;               // the "config" record
  std::vector<nlohmann::json> epochs;  // the "epoch" records, in order
  nlohmann::json ps;                   // a parameter-server run's "ps" record (ps/run_stats.h), or null
};

// Throws InputError when the file cannot be read, DataError naming the line when it is not a
// metrics log of dtrain train.
MeasuredRun read_metrics_log(const std::string& path);

struct Explanation {
  int epochs_used = 0;
  double measured_step = 0;
  PhaseTimes measured;  // per step
  double measured_other = 0;
  bool has_model = false;
  std::string profile;  // the profile the model terms come from
  double predicted_step = 0, one_worker_step = 0;
  PhaseTimes predicted;  // per step
  double comm_busy = 0, comm_latency = 0, comm_allreduce = 0;
  double straggler = 0;  // of predicted.comm: the wait for the slowest worker
  bool turns = false;    // ranks take turns on shared CPUs: `straggler` is the turns' cost
  int buckets = 0;
  // Cache-line round trips between two cores (core/core_round_trip.h), seconds, 0 when not
  // recorded: at the run's start (the log) and when the profile was calibrated.
  double run_core_round_trip = 0, profile_core_round_trip = 0;
  // Parameter-server runs (the log's "ps" record): global steps per second while every worker
  // ran, server 0's busy share, each worker's wait for the servers (seconds in all).
  bool parameter_server = false;
  double ps_steps_per_second = 0, ps_busy_fraction = 0;
  std::vector<double> ps_worker_waits;
  std::optional<LayerComparison> layers;  // with a trace
  std::string limit;                      // what limits scaling
  std::string text;                       // the report
};

// profile_spec: "" to use the prediction the log holds (if any). trace_path: "" for none, else the
// run's Chrome trace, compared layer by layer with the model (which needs a profile: InputError).
Explanation explain_run(const MeasuredRun& run, const std::string& profile_spec, const std::string& trace_path = "");

// What `dtrain explain --json` prints: the measured and predicted terms per step (seconds), what
// limits scaling and, with a trace, the layers per kind; the model's terms only where it has them.
nlohmann::json explanation_json(const Explanation& e);

}  // namespace dtrain::perf
