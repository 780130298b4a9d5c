// dtrain.Profile: a hardware profile of the performance model (perfmodel/profile.h), loaded from a
// JSON file, composed from the built-in names as --profile composes them, or measured on this
// machine by the one-process calibration (calibration/calibration.h), as `dtrain calibrate`
// measures it without mpirun.
#include "perfmodel/profile.h"

#include <fmt/format.h>

#include <fstream>
#include <string>
#include <vector>

#include "calibration/calibration.h"
#include "core/error.h"
#include "core/threads.h"
#include "perfmodel/report.h"
#include "python/bindings.h"

namespace dtrain::python {
namespace {

using perf::Profile;

void save_profile(const Profile& p, const py::handle& path_object) {
  const std::string path = path_argument(path_object);
  std::ofstream out(path);
  if (!out) throw InputError(fmt::format("cannot write the profile '{}': check the folder exists", path));
  out << perf::profile_to_json(p).dump(2) << '\n';
  if (!out) throw DataError(fmt::format("writing the profile '{}' failed (disk full?)", path));
}

Profile calibrate_here(int threads, const std::vector<std::string>& models, std::int64_t batch, double min_seconds,
                       int rounds, const std::string& name, const std::string& scratch_dir, bool verbose) {
  perf::CalibrationOptions o;
  o.device.models = models;
  o.device.batch = batch;
  o.device.min_seconds = min_seconds;
  o.device.rounds = rounds;
  o.device.scratch_dir = scratch_dir;
  o.min_seconds = min_seconds;
  o.threads = threads;
  o.name = name;
  perf::check_calibration_options(o);
  perf::Calibration c;
  {
    // Seconds of measurement that call no Python: other Python threads may run meanwhile.
    py::gil_scoped_release unlocked;
    const std::lock_guard<std::mutex> alone(run_lock());
    set_num_threads(threads);
    c = perf::calibrate(nullptr, o);
  }
  if (verbose) py::print(perf::format_calibration(c, false), py::arg("end") = "");
  return perf::calibrated_profile(c);
}

}  // namespace

void bind_profile(py::module_& m) {
  const perf::CalibrationOptions defaults;
  py::class_<Profile>(m, "Profile",
                      "A hardware profile of the performance model: device, node and network constants, each with "
                      "its source. Profile.compose('8xp100-nvlink+eth-50g'), Profile.load('my.json') or "
                      "Profile.calibrate(); dtrain.predict(profile=...) takes one (or the spec text).")
      .def_static(
          "load", [](const py::object& path) { return perf::load_profile_file(path_argument(path)); }, py::arg("path"),
          "A profile JSON file (dtrain calibrate's, or one written by save()).")
      .def_static("compose", &perf::load_profile, py::arg("spec"),
                  "Built-in names and profile files joined by '+', as --profile takes them: DEVICE, KxDEVICE-LINK "
                  "(K per node), NETWORK, or a path; e.g. '8xp100-nvlink+eth-50g'.")
      .def_static(
          "builtin_names",
          []() {
            const perf::ProfileNames n = perf::builtin_profile_names();
            py::dict out;
            out["devices"] = n.devices;
            out["links"] = n.links;
            out["networks"] = n.networks;
            return out;
          },
          "The built-in devices, intra-node links and networks, as {'devices': [...], 'links': [...], "
          "'networks': [...]}.")
      .def_static("builtin_folder", &perf::profile_library_dir,
                  "The folder the built-in profiles are read from: $DTRAIN_PROFILES, else the profiles/ of the "
                  "sources above the module in a build tree, or PREFIX/share/dtrain/profiles where it is installed.")
      .def_static("calibrate", &calibrate_here, py::kw_only(), py::arg("threads") = defaults.threads,
                  py::arg("models") = defaults.device.models, py::arg("batch") = defaults.device.batch,
                  py::arg("min_seconds") = defaults.min_seconds, py::arg("rounds") = defaults.device.rounds,
                  py::arg("name") = defaults.name, py::arg("scratch_dir") = defaults.device.scratch_dir,
                  py::arg("verbose") = false,
                  "Measures this machine in this process, as `dtrain calibrate` does without mpirun (compute per "
                  "layer kind, memory, disk, update; no links between ranks). verbose: print what was measured.")
      .def_readwrite("name", &Profile::name, "The profile's name (the --profile text or the file's path).")
      .def_readwrite("description", &Profile::description)
      .def_property_readonly(
          "device", [](const Profile& p) { return p.device.name; }, "The device's name.")
      .def_property_readonly(
          "accelerators", [](const Profile& p) { return p.node.accelerators; }, "Devices per node.")
      .def_property_readonly(
          "intra_link", [](const Profile& p) { return p.node.intra_link.name; }, "The link between a node's devices.")
      .def_property_readonly(
          "network", [](const Profile& p) { return p.network ? py::object(py::str(p.network->name)) : py::none(); },
          "The link between nodes; None for a single-node machine.")
      .def(
          "to_json", [](const Profile& p) { return to_python(perf::profile_to_json(p)); },
          "The profile in the schema (docs/perfmodel.md) as a dict, as save() writes it.")
      .def("save", &save_profile, py::arg("path"), "Writes the profile as JSON, which load() and --profile read.")
      .def("__str__", &perf::describe_profile)
      .def("__repr__", [](const Profile& p) { return fmt::format("<dtrain.Profile {}>", perf::describe_profile(p)); });
}

}  // namespace dtrain::python
