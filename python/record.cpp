// dtrain.Record: one JSON object of the library (a predicted row, an explanation) as a Python
// object whose fields read as attributes (row.step_s), by name (row["step_s"]) and as a dict
// (row.to_dict()): the names are the JSON's, so code written against `dtrain predict --json`
// reads the same fields here.
#include <string>

#include "python/bindings.h"

namespace dtrain::python {
namespace {

struct Record {
  std::string kind;
  py::dict fields;
  std::string text_field;  // str() of the record, where set and present
};

py::object field(const Record& r, const std::string& name) {
  if (!r.fields.contains(name)) {
    throw py::attribute_error("'" + r.kind + "' has no field '" + name +
                              "'; its fields: " + py::str(", ").attr("join")(r.fields).cast<std::string>());
  }
  return r.fields[py::str(name)];
}

std::string record_repr(const Record& r) {
  std::string out = r.kind + "(";
  const char* sep = "";
  for (const auto& [key, value] : r.fields) {
    out += sep + key.cast<std::string>() + "=" + py::repr(value).cast<std::string>();
    sep = ", ";
  }
  return out + ")";
}

}  // namespace

py::object make_record(const std::string& kind, const py::dict& fields, const std::string& text_field) {
  return py::cast(Record{kind, fields, text_field});
}

std::string path_argument(const py::handle& path) {
  return py::module_::import("os").attr("fspath")(path).cast<std::string>();
}

void bind_records(py::module_& m) {
  py::class_<Record>(m, "Record",
                     "Fields of a result (a predicted row, an explanation), read as attributes, by name or with "
                     "to_dict(); the names are those of the command's --json output.")
      .def("__getattr__", &field, py::arg("name"))
      .def("__getitem__", &field, py::arg("name"))
      .def("__contains__", [](const Record& r, const std::string& name) { return r.fields.contains(name); })
      .def(
          "to_dict", [](const Record& r) { return py::module_::import("copy").attr("deepcopy")(r.fields); },
          "The fields as a new dict (nested values copied too).")
      .def(
          "keys", [](const Record& r) { return py::list(r.fields); }, "The field names.")
      .def("__dir__", [](const Record& r) { return py::list(r.fields); })
      .def("__eq__",
           [](const Record& r, const py::object& other) {
             if (!py::isinstance<Record>(other)) return false;
             const Record& o = other.cast<const Record&>();
             return r.kind == o.kind && r.fields.equal(o.fields);
           })
      .def("__repr__", &record_repr)
      .def("__str__", [](const Record& r) {
        if (!r.text_field.empty() && r.fields.contains(r.text_field)) return py::str(r.fields[py::str(r.text_field)]);
        return py::str(record_repr(r));
      });
}

}  // namespace dtrain::python
