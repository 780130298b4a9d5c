// `dtrain calibrate`: measure this machine's profile (src/calibration/calibration.h) and write it
// as JSON for `dtrain predict --profile`, `dtrain train --profile` and `dtrain explain`.
#include <fmt/format.h>

#include <fstream>

#include "apps/dtrain/commands.h"
#include "apps/dtrain/distributed.h"
#include "calibration/calibration.h"
#include "core/error.h"
#include "core/threads.h"
#include "tensor/kernels/cpu/compute_precision.h"

namespace dtrain::cli {
namespace {

struct CalibrateOptions {
  std::string output = "dtrain-profile.json";
  std::string name;
  int threads = 1;
  std::int64_t batch = 64;
  std::vector<std::string> models = {"mlp", "lenet", "resnet20"};
  std::string scratch_dir;
  double min_seconds = 0.1;
  int rounds = 3;
  bool per_shape = false;
  double timeout = 300;
  std::string chunk_kb = "auto";
  int tensor_parallel = 1;
  std::string precision = "f32";
};

int run_calibrate(const CalibrateOptions& o) {
  perf::CalibrationOptions opts;
  opts.device.models = o.models;
  opts.device.batch = o.batch;
  opts.device.tensor_parallel = o.tensor_parallel;
  opts.device.bf16 = parse_compute_precision(o.precision) == ComputePrecision::kBF16;
  if (opts.device.bf16) set_compute_precision(ComputePrecision::kBF16);  // fails here on a CPU without bf16
  set_compute_precision(ComputePrecision::kF32);
  opts.device.min_seconds = o.min_seconds;
  opts.device.rounds = o.rounds;
  opts.device.scratch_dir = o.scratch_dir;
  opts.min_seconds = o.min_seconds;
  opts.threads = o.threads;
  opts.name = o.name;
  perf::check_calibration_options(opts);
  set_num_threads(o.threads);
  ProcessGroup group = join_process_group(o.timeout, o.chunk_kb);
  const perf::Calibration c = perf::calibrate(group.worker.get(), opts);
  if (group.rank != 0) return 0;
  const perf::Profile profile = perf::calibrated_profile(c);
  std::ofstream out(o.output);
  if (!out)
    throw InputError(fmt::format("cannot write the profile '{}' (--output): check the folder exists", o.output));
  out << perf::profile_to_json(profile).dump(2) << '\n';
  if (!out) throw DataError(fmt::format("writing the profile '{}' failed (disk full?)", o.output));
  fmt::print("{}profile: {}\n", perf::format_calibration(c, o.per_shape), o.output);
  return 0;
}

}  // namespace

Action register_calibrate(CLI::App& app) {
  auto o = std::make_shared<CalibrateOptions>();
  CLI::App* c = app.add_subcommand(
      "calibrate",
      "Measure this machine's profile (compute per layer kind, memory, disk, update, and under mpirun the links "
      "between ranks) and write it as JSON; run it with the ranks per host and threads of the runs to predict");
  c->add_option("--output,-o", o->output, "Profile file to write")->capture_default_str();
  c->add_option("--name", o->name, "Profile name (default: calibrated-HOST)");
  c->add_option("--threads", o->threads, "Compute threads per rank, as the runs to predict use")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  c->add_option("--batch", o->batch, "Samples per layer benchmark call (the per-rank batch of the runs to predict)")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  c->add_option("--models", o->models, "Models whose layer shapes the compute rates are measured on")
      ->delimiter(',')
      ->capture_default_str();
  c->add_option("--scratch-dir", o->scratch_dir,
                "Folder for the disk benchmark's 64 MiB file (default: $TMPDIR or /tmp)");
  c->add_option("--min-seconds", o->min_seconds, "Time each measurement is repeated for (longer: steadier)")
      ->capture_default_str();
  c->add_option("--rounds", o->rounds,
                "Passes over every layer shape, --min-seconds shared among them; each shape keeps its median pass "
                "(a slow moment of a shared machine then costs one pass, not the rate)")
      ->capture_default_str()
      ->check(CLI::Range(1, 100));
  c->add_option("--tensor-parallel", o->tensor_parallel,
                "Time each layer as one of T tensor-parallel ranks runs it (its share of the output or input "
                "features), for predicting --tensor-parallel T runs")
      ->capture_default_str()
      ->check(CLI::Range(1, 1024));
  c->add_option("--precision", o->precision,
                "bf16: also time the convolutions and linear layers in bf16, for dtrain predict --precision bf16 "
                "(device.precisions.bf16)")
      ->capture_default_str();
  c->add_flag("--per-shape", o->per_shape, "Also print every layer shape's time and rate");
  c->add_option("--timeout", o->timeout, "Under mpirun: seconds a message may wait for a peer (0: forever)")
      ->capture_default_str();
  add_chunk_flag(*c, o->chunk_kb);
  return [c, o]() { return c->parsed() ? run_calibrate(*o) : -1; };
}

}  // namespace dtrain::cli
