// `dtrain explain LOG`: a measured run broken into the performance model's terms, and what limits
// its scaling (src/perfmodel/explain.h).
#include "perfmodel/explain.h"

#include <fmt/format.h>

#include "apps/dtrain/commands.h"

namespace dtrain::cli {
namespace {

struct ExplainOptions {
  std::string log;
  std::string profile;
  std::string trace;
  bool json = false;
};

int run_explain(const ExplainOptions& o) {
  const perf::Explanation e = perf::explain_run(perf::read_metrics_log(o.log), o.profile, o.trace);
  if (!o.json) {
    fmt::print("{}", e.text);
    return 0;
  }
  auto phases = [](const PhaseTimes& p) {
    return nlohmann::json{
        {"data", p.data}, {"forward", p.forward}, {"backward", p.backward}, {"comm", p.comm}, {"update", p.update}};
  };
  nlohmann::json j = {{"epochs_used", e.epochs_used},
                      {"measured_step_s", e.measured_step},
                      {"measured_s", phases(e.measured)},
                      {"measured_other_s", e.measured_other},
                      {"limit", e.limit}};
  if (e.has_model) {
    j["profile"] = e.profile;
    j["predicted_step_s"] = e.predicted_step;
    j["predicted_s"] = phases(e.predicted);
    j["one_worker_step_s"] = e.one_worker_step;
    j["comm_busy_s"] = e.comm_busy;
    j["comm_latency_s"] = e.comm_latency;
    j["comm_allreduce_s"] = e.comm_allreduce;
    j["straggler_s"] = e.straggler;
    j["buckets"] = e.buckets;
  }
  if (e.layers) {
    nlohmann::json kinds = nlohmann::json::array();
    for (const perf::LayerTimes& k : e.layers->kinds) {
      kinds.push_back({{"kind", k.kind}, {"phase", k.phase}, {"measured_s", k.measured}, {"predicted_s", k.predicted}});
    }
    j["layers"] = {{"rank_steps", e.layers->rank_steps},
                   {"by_kind", kinds},
                   {"measured_s", e.layers->measured_total()},
                   {"predicted_s", e.layers->predicted_total()},
                   {"unmatched_measured_s", e.layers->unmatched_measured},
                   {"missing", e.layers->missing}};
  }
  fmt::print("{}\n", j.dump(2));
  return 0;
}

}  // namespace

Action register_explain(CLI::App& app) {
  auto o = std::make_shared<ExplainOptions>();
  CLI::App* e = app.add_subcommand(
      "explain",
      "Break a measured run (dtrain train's metrics log) into the performance model's terms and name what "
      "limits its scaling");
  e->add_option("log", o->log, "The JSONL metrics log of dtrain train (--log)")->required();
  e->add_option("--profile", o->profile,
                "Profile for the model's terms (default: the one the run was trained with, when it logged one)");
  e->add_option("--trace", o->trace,
                "The run's Chrome trace (dtrain train --trace): also compare its forward and backward with the "
                "model's, per layer kind (needs a profile)");
  e->add_flag("--json", o->json, "Print JSON for tools instead of the report");
  return [e, o]() { return e->parsed() ? run_explain(*o) : -1; };
}

}  // namespace dtrain::cli
