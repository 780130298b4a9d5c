// The dtrain Python module: the performance model's predictions, hardware profiles, training and
// the explanation of a run, from the same library and command code as the dtrain command.
#include "python/bindings.h"

PYBIND11_MODULE(dtrain, m) {
  namespace python = dtrain::python;
  m.doc() =
      "dtrain: data-parallel deep-learning training with a built-in performance model.\n\n"
      "predict(model=..., workers=[...], profile=...)  the model's rows, as `dtrain predict --json`\n"
      "Profile.compose(spec) / load(path) / calibrate()  hardware profiles\n"
      "train(**flags)                                   `dtrain train`; returns the metrics log's records\n"
      "explain(log, profile=None, trace=None)           `dtrain explain` of a run\n"
      "Errors raise dtrain.Error subclasses (InputError is also a ValueError) with the command's messages.";
  m.attr("__version__") = DTRAIN_VERSION;
  python::bind_errors(m);
  python::bind_records(m);
  python::bind_profile(m);
  python::bind_predict(m);
  python::bind_train(m);
  python::bind_explain(m);
}
