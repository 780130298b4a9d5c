// dtrain.predict: the performance model's prediction for every worker count and exchange, as
// `dtrain predict --json` gives it (perfmodel/scaling_prediction.h makes both): a list of rows,
// one dtrain.Record per configuration with the JSON's fields, which also carries the run-level
// fields (model, parameters, dataset, profile, best) and the command's table as attributes.
#include <fmt/format.h>

#include <string>
#include <vector>

#include "core/error.h"
#include "perfmodel/report.h"
#include "perfmodel/scaling_prediction.h"
#include "python/bindings.h"

namespace dtrain::python {
namespace {

// The class of predict's answer: a list subclass, so a prediction is the list of its rows wherever
// a list is expected, with the run-level fields as attributes.
py::object& prediction_type() {
  static auto* type = new py::object();  // set by bind_predict; never freed, as Python's own types are not
  return *type;
}

py::object prediction_to_dict(const py::object& self) {
  py::list runs;
  for (const py::handle row : self) runs.append(row.attr("to_dict")());
  py::dict out;
  out["runs"] = runs;
  for (const char* name : {"best", "model", "parameters", "dataset", "profile"}) {
    out[name] = py::module_::import("copy").attr("deepcopy")(self.attr(name));
  }
  return out;
}

// A comma-separated flag value from a str, an int, or a sequence of them.
std::string comma_list(const py::handle& value, const char* argument) {
  if (py::isinstance<py::str>(value)) return value.cast<std::string>();
  if (py::isinstance<py::int_>(value)) return py::str(value).cast<std::string>();
  if (!py::isinstance<py::sequence>(value)) {
    throw InputError(fmt::format("{}: give a list such as [8, 64] or a comma-separated string, got {}", argument,
                                 py::repr(value).cast<std::string>()));
  }
  std::string out;
  for (const py::handle item : value) {
    if (!out.empty()) out += ',';
    out += py::str(item).cast<std::string>();
  }
  return out;
}

py::object predict(const std::string& model, const std::string& dataset, const py::object& workers,
                   std::int64_t batch_per_worker, const py::object& profile, const std::string& sync,
                   const py::object& allreduce, int servers, int epochs, const std::string& comm_dtype,
                   double bucket_mb, bool double_buffering, int accumulate, bool hierarchical, int staleness,
                   const std::string& slow_mode, double slow_factor, double slow_prob, std::int64_t global_batch,
                   bool sync_bn) {
  perf::ScalingQuery q;
  q.model = model;
  q.dataset = dataset;
  q.workers = comma_list(workers, "workers");
  q.batch_per_worker = batch_per_worker;
  q.sync = sync;
  q.allreduce_given = !allreduce.is_none();
  if (q.allreduce_given) q.allreduce = comma_list(allreduce, "allreduce");
  q.servers = servers;
  q.epochs = epochs;
  q.comm_dtype = comm_dtype;
  q.bucket_mb = bucket_mb;
  q.double_buffering = double_buffering;
  q.accumulate = accumulate;
  q.hierarchical = hierarchical;
  q.staleness = staleness;
  q.slow_mode = slow_mode;
  q.slow_factor = slow_factor;
  q.slow_prob = slow_prob;
  q.global_batch = global_batch;
  q.sync_batch_norm = sync_bn;
  perf::ScalingPrediction p;
  if (py::isinstance<perf::Profile>(profile)) {
    const auto& loaded = profile.cast<const perf::Profile&>();
    q.profile = loaded.name;
    p = perf::predict_scaling(q, loaded);
  } else {
    if (!profile.is_none()) q.profile = path_argument(profile);  // a spec, or one file's path
    p = perf::predict_scaling(q);
  }
  const nlohmann::json j = perf::scaling_json(q, p);
  py::list rows;
  for (const nlohmann::json& run : j.at("runs")) {
    // The configuration first, then the rest in the JSON's (alphabetical) order, for a readable repr.
    py::dict fields;
    fields["workers"] = to_python(run.at("workers"));
    fields["exchange"] = to_python(run.at("exchange"));
    for (const auto& [key, value] : run.items()) {
      if (key != "workers" && key != "exchange") fields[py::str(key)] = to_python(value);
    }
    rows.append(make_record("Row", fields));
  }
  py::object out = prediction_type()(rows);
  for (const char* name : {"best", "model", "parameters", "dataset", "profile"}) {
    py::setattr(out, name, to_python(j.at(name)));
  }
  py::setattr(out, "table", py::str(perf::format_table(p.runs)));
  return out;
}

}  // namespace

void bind_predict(py::module_& m) {
  // A method of a class made at run time: a builtin function wrapped to bind to its instance.
  const py::cpp_function to_dict(&prediction_to_dict, py::name("to_dict"),
                                 "The whole prediction as `dtrain predict --json` prints it: runs, best, model, "
                                 "parameters, dataset, profile.");
  py::dict members;
  members["__module__"] = "dtrain";
  members["__doc__"] =
      "dtrain.predict's answer: the list of its rows (dtrain.Record, the fields of --json's runs), with the "
      "attributes model, parameters, dataset, profile (a dict in the profile schema), best (the fastest exchange "
      "per worker count) and table (the command's table as text); to_dict() gives the --json document.";
  members["to_dict"] = py::reinterpret_steal<py::object>(PyInstanceMethod_New(to_dict.ptr()));
  const auto list_type = py::reinterpret_borrow<py::object>(reinterpret_cast<PyObject*>(&PyList_Type));
  py::object type = py::module_::import("builtins").attr("type")("Prediction", py::make_tuple(list_type), members);
  m.attr("Prediction") = type;
  prediction_type() = type;

  const perf::ScalingQuery d;
  py::list default_workers;
  for (const py::handle w : py::str(d.workers).attr("split")(","))
    default_workers.append(py::int_(py::reinterpret_borrow<py::object>(w)));
  m.def("predict", &predict, py::kw_only(), py::arg("model") = d.model, py::arg("dataset") = d.dataset,
        py::arg("workers") = default_workers, py::arg("batch_per_worker") = d.batch_per_worker,
        py::arg("profile") = py::none(), py::arg("sync") = d.sync, py::arg("allreduce") = py::none(),
        py::arg("servers") = d.servers, py::arg("epochs") = d.epochs, py::arg("comm_dtype") = d.comm_dtype,
        py::arg("bucket_mb") = d.bucket_mb, py::arg("double_buffering") = d.double_buffering,
        py::arg("accumulate") = d.accumulate, py::arg("hierarchical") = d.hierarchical,
        py::arg("staleness") = d.staleness, py::arg("slow_mode") = d.slow_mode, py::arg("slow_factor") = d.slow_factor,
        py::arg("slow_prob") = d.slow_prob, py::arg("global_batch") = d.global_batch,
        py::arg("sync_bn") = d.sync_batch_norm,
        "Predicts training time per step, epoch and run for every worker count and exchange, as `dtrain predict` "
        "does with the same flags (dashes as underscores). profile: a dtrain.Profile or the --profile text "
        "(required). workers: a list of counts (or '8,64'). allreduce: an exchange or a list of them (ring, tree, "
        "butterfly, onetoall, mpi, shm, auto, ps); None: ring, or ps with sync 'ssp' or 'asp'. slow_mode "
        "('persistent' or 'random'), slow_factor and slow_prob price workers slowed on purpose under the rule. "
        "global_batch (> 0) keeps the samples per step over all workers fixed instead of batch_per_worker. "
        "Returns a dtrain.Prediction, the list of rows.");
}

}  // namespace dtrain::python
