// dtrain.train: `dtrain train` from Python. The keyword arguments become the command's arguments
// (model="mlp" -> --model=mlp, double_buffering=True -> --double-buffering, augment=["flip",
// "translate:4"] -> --augment=flip,translate:4) and go through the command's own parsing and code
// (apps/dtrain: cli::run), so every flag works, and fails, as on the command line. The answer is
// the run's metrics log read back, one dict per record.
#include <fmt/format.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <vector>

#include "apps/dtrain/commands.h"
#include "core/error.h"
#include "core/malloc_tuning.h"
#include "python/bindings.h"

namespace dtrain::python {
namespace {

// The metrics log of a call that named none: a fresh file, removed when the call ends.
class TemporaryLog {
 public:
  TemporaryLog() {
    std::string name = (std::filesystem::temp_directory_path() / "dtrain-train-XXXXXX.jsonl").string();
    const int fd = mkstemps(name.data(), 6);
    if (fd < 0) throw InputError(fmt::format("cannot create a temporary metrics log '{}': set TMPDIR", name));
    close(fd);
    path_ = name;
  }
  ~TemporaryLog() {
    std::error_code ignored;
    std::filesystem::remove(path_, ignored);
  }
  TemporaryLog(const TemporaryLog&) = delete;
  TemporaryLog& operator=(const TemporaryLog&) = delete;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

// --flag=value for every option given; True: the bare flag; False and None: not given.
std::vector<std::string> command_arguments(const py::kwargs& options) {
  std::vector<std::string> args{"train"};
  for (const auto& [key, value] : options) {
    std::string flag = "--" + key.cast<std::string>();
    for (char& c : flag) c = c == '_' ? '-' : c;
    if (value.is_none()) continue;
    if (py::isinstance<py::bool_>(value)) {
      if (value.cast<bool>()) args.push_back(flag);
      continue;
    }
    std::string text;
    if (py::isinstance<py::list>(value) || py::isinstance<py::tuple>(value)) {
      for (const py::handle item : value) {
        if (!text.empty()) text += ',';
        text += py::str(item).cast<std::string>();
      }
    } else {
      text = py::str(value).cast<std::string>();
    }
    if (text.empty()) {
      args.insert(args.end(), {flag, ""});  // CLI11 would take "--log=" to want the next argument
    } else {
      args.push_back(fmt::format("{}={}", flag, text));
    }
  }
  return args;
}

py::list read_log(const std::string& path) {
  py::list records;
  std::ifstream in(path);
  std::string line;
  for (int number = 1; std::getline(in, line); ++number) {
    if (line.empty()) continue;
    try {
      records.append(to_python(nlohmann::json::parse(line)));
    } catch (const nlohmann::json::exception& e) {
      throw DataError(fmt::format("metrics log '{}' line {} is not JSON: {}", path, number, e.what()));
    }
  }
  return records;
}

// Python's buffered output first, then the command's, in the order they were written.
void flush_python_output() {
  const py::module_ sys = py::module_::import("sys");
  for (const char* name : {"stdout", "stderr"}) {
    const py::object stream = sys.attr(name);
    if (!stream.is_none()) stream.attr("flush")();
  }
}

py::list train(const py::kwargs& options) {
  std::vector<std::string> args = command_arguments(options);
  std::optional<TemporaryLog> temporary;
  std::string log;
  if (!options.contains("log") || options["log"].is_none()) {
    temporary.emplace();
    log = temporary->path();
    args.push_back("--log=" + log);
  } else {
    log = path_argument(options["log"]);
  }
  if (!options.contains("progress") || options["progress"].is_none()) args.emplace_back("--progress=none");
  flush_python_output();
  {
    // Training calls no Python: other Python threads run meanwhile.
    py::gil_scoped_release unlocked;
    const std::lock_guard<std::mutex> alone(run_lock());
    tune_malloc_for_training();
    const int code = cli::run(args);
    std::fflush(stdout);
    if (code != 0) throw Error(fmt::format("dtrain train ended with exit code {}", code));
  }
  if (log.empty()) return py::list();
  return read_log(log);
}

}  // namespace

std::mutex& run_lock() {
  static std::mutex lock;
  return lock;
}

void bind_train(py::module_& m) {
  m.def("train", &train,
        "Trains as `dtrain train` does, with its flags as keyword arguments (dashes as underscores; True for a "
        "flag; a list for a comma-separated value), e.g. model='mlp', epochs=1, batch=64, limit=1000, lr=0.05, "
        "threads=2, log='run.jsonl', profile=...; the defaults are the command's (`dtrain train --help` lists every "
        "flag). The per-epoch progress lines are left out unless progress='lines' or 'bar' is given. Returns the "
        "metrics log's records as dicts (the "
        "'config' record, then the 'epoch' ones); without log=..., the log goes to a temporary file, removed "
        "afterwards; log='' writes none and returns [].");
}

}  // namespace dtrain::python
