// dtrain.explain: a measured run (dtrain train's metrics log) in the performance model's terms, as
// `dtrain explain` reports it (perfmodel/explain.h): the fields of its --json output, and the
// report's text as the field `text` (also str() of the result).
#include "perfmodel/explain.h"

#include <string>

#include "python/bindings.h"

namespace dtrain::python {
namespace {

py::object explain(const py::object& log, const py::object& profile, const py::object& trace) {
  const std::string profile_spec = profile.is_none() ? "" : path_argument(profile);
  const std::string trace_path = trace.is_none() ? "" : path_argument(trace);
  const perf::Explanation e = perf::explain_run(perf::read_metrics_log(path_argument(log)), profile_spec, trace_path);
  py::dict fields = to_python(perf::explanation_json(e));
  fields["text"] = e.text;
  return make_record("Explanation", fields, "text");
}

}  // namespace

void bind_explain(py::module_& m) {
  m.def("explain", &explain, py::arg("log"), py::kw_only(), py::arg("profile") = py::none(),
        py::arg("trace") = py::none(),
        "Explains a run from dtrain train's metrics log, as `dtrain explain` does: measured and predicted time per "
        "step by phase, and what limits scaling (field 'limit'). profile: the --profile text for the model's terms "
        "(default: the one the run logged, if any); trace: the run's Chrome trace, to compare layer kinds. Returns a "
        "dtrain.Record with the fields of --json and 'text', the report (also its str()).");
}

}  // namespace dtrain::python
