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
  if (o.json) {
    fmt::print("{}\n", perf::explanation_json(e).dump(2));
  } else {
    fmt::print("{}", e.text);
  }
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
