// The library's typed errors (core/error.h) as Python exceptions with the same messages, so a
// script catches what the command would have printed: dtrain.InputError for a bad option (also a
// ValueError), dtrain.DataError for a bad file, ... all under dtrain.Error (a RuntimeError).

#include <string>
#include <utility>

#include "core/error.h"
#include "python/bindings.h"

namespace dtrain::python {
namespace {

// The exception types, created once with the module and never freed: they live as long as the
// process may raise them.
struct ExceptionTypes {
  PyObject* error = nullptr;
  PyObject* input = nullptr;
  PyObject* data = nullptr;
  PyObject* shape = nullptr;
  PyObject* numeric = nullptr;
  PyObject* comm = nullptr;
  PyObject* internal = nullptr;
};

ExceptionTypes& exception_types() {
  static ExceptionTypes types;
  return types;
}

PyObject* add_exception(py::module_& m, const char* name, const char* doc, const py::tuple& bases) {
  const std::string qualified = std::string("dtrain.") + name;
  PyObject* type = PyErr_NewExceptionWithDoc(qualified.c_str(), doc, bases.ptr(), nullptr);
  if (type == nullptr) throw py::error_already_set();
  m.add_object(name, py::handle(type));
  return type;
}

void translate(std::exception_ptr thrown) {
  const ExceptionTypes& t = exception_types();
  try {
    std::rethrow_exception(std::move(thrown));
  } catch (const InputError& e) {
    PyErr_SetString(t.input, e.what());
  } catch (const DataError& e) {
    PyErr_SetString(t.data, e.what());
  } catch (const ShapeError& e) {
    PyErr_SetString(t.shape, e.what());
  } catch (const NumericError& e) {
    PyErr_SetString(t.numeric, e.what());
  } catch (const CommError& e) {
    PyErr_SetString(t.comm, e.what());
  } catch (const InternalError& e) {
    PyErr_SetString(t.internal, e.what());
  } catch (const Error& e) {
    PyErr_SetString(t.error, e.what());
  }
  // Anything else propagates to pybind11's own translations (std::bad_alloc: MemoryError, ...).
}

}  // namespace

void bind_errors(py::module_& m) {
  ExceptionTypes& t = exception_types();
  t.error = add_exception(m, "Error", "A dtrain error; its message names the problem and the fix.",
                          py::make_tuple(py::handle(PyExc_RuntimeError)));
  const py::handle error(t.error);
  t.input = add_exception(m, "InputError", "An option, model, name or configuration given is not valid.",
                          py::make_tuple(error, py::handle(PyExc_ValueError)));
  t.data = add_exception(m, "DataError", "A data, log, checkpoint or profile file is missing, truncated or corrupt.",
                         py::make_tuple(error));
  t.shape = add_exception(m, "ShapeError", "Tensor shapes, dtypes or layouts do not fit the operation.",
                          py::make_tuple(error));
  t.numeric =
      add_exception(m, "NumericError", "Training diverged: NaN or Inf in a loss or gradient.", py::make_tuple(error));
  t.comm =
      add_exception(m, "CommError", "A collective failed: a peer died, timed out or disagreed.", py::make_tuple(error));
  t.internal = add_exception(m, "InternalError", "A check inside dtrain failed: a bug, not a user error.",
                             py::make_tuple(error));
  py::register_exception_translator(&translate);
}

}  // namespace dtrain::python
