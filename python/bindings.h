// The parts of the dtrain Python module; module.cpp puts them together. Each part calls the
// library, or the dtrain command's own code (apps/dtrain), so the module answers, and fails, as
// the command does.
#pragma once

#include <pybind11/pybind11.h>
#include <pybind11/stl.h>  // in every part alike: the casters of a type must not differ between files

#include <mutex>
#include <nlohmann/json.hpp>
#include <string>

namespace dtrain::python {

namespace py = pybind11;

void bind_errors(py::module_& m);   // dtrain.Error and its subclasses (errors.cpp)
void bind_records(py::module_& m);  // dtrain.Record (record.cpp)
void bind_profile(py::module_& m);  // dtrain.Profile (profile.cpp)
void bind_predict(py::module_& m);  // dtrain.predict, dtrain.Prediction (predict.cpp)
void bind_train(py::module_& m);    // dtrain.train (train.cpp)
void bind_explain(py::module_& m);  // dtrain.explain (explain.cpp)

// JSON as json.loads reads what the command prints: objects become dicts, arrays lists, and null
// (which nlohmann::json also writes for NaN and infinities) None. json.cpp.
py::object to_python(const nlohmann::json& j);

// A dtrain.Record: the fields of a JSON object, read as attributes, by [] and through to_dict().
// `kind` names it in its repr ("Row", "Explanation"); where `text_field` is one of the fields,
// str() of the record is that field. record.cpp.
py::object make_record(const std::string& kind, const py::dict& fields, const std::string& text_field = "");

// A path argument: a str or an os.PathLike (pathlib.Path). record.cpp.
std::string path_argument(const py::handle& path);

// Held, without the GIL, while training or calibrating: the thread count and the malloc settings
// they set are the process's, so two Python threads run them one after the other. train.cpp.
std::mutex& run_lock();

}  // namespace dtrain::python
