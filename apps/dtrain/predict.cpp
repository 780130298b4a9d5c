// `dtrain predict`: how long training takes, for which configuration, and what limits it, from
// the performance model (src/perfmodel, docs/perfmodel.md) and a hardware profile.
#include <fmt/format.h>

#include <fstream>

#include "apps/dtrain/commands.h"
#include "core/error.h"
#include "nn/models/models.h"
#include "perfmodel/layer_cost.h"
#include "perfmodel/predicted_trace.h"
#include "perfmodel/profile.h"
#include "perfmodel/published.h"
#include "perfmodel/report.h"
#include "perfmodel/run_model.h"
#include "perfmodel/straggler.h"
#include "perfmodel/svg_plot.h"

namespace dtrain::cli {
namespace {

struct PredictOptions {
  std::string model = "resnet50";
  std::string dataset = "imagenet";
  std::string workers = "1,8,64,256,1024";
  std::int64_t batch_per_worker = 32;
  std::string profile;
  std::string sync = "bsp";
  std::string allreduce = "ring";
  bool allreduce_given = false;
  int servers = 1;
  int epochs = 90;
  std::string comm_dtype = "f32";
  double bucket_mb = 1.0;
  bool double_buffering = false;
  int accumulate = 1;
  bool hierarchical = false;
  bool json = false;
  std::string plot;
  bool list_profiles = false;
  bool published = false;
  bool breakdown = false;
  std::string trace;
  int trace_steps = 10;
};

std::vector<std::string> split(const std::string& s) {
  std::vector<std::string> out;
  std::size_t begin = 0;
  while (begin <= s.size()) {
    const std::size_t end = std::min(s.find(',', begin), s.size());
    out.push_back(s.substr(begin, end - begin));
    begin = end + 1;
  }
  return out;
}

std::vector<int> parse_workers(const std::string& s) {
  std::vector<int> out;
  for (const std::string& w : split(s)) {
    std::size_t used = 0;
    long v = 0;
    try {
      v = std::stol(w, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used != w.size() || w.empty()) {
      throw InputError(
          fmt::format("--workers: '{}' is not a whole number; give a comma-separated list such as "
                      "8,64,256",
                      w));
    }
    if (v < 1 || v > (1 << 24)) throw InputError(fmt::format("--workers: {} is not valid; workers must be >= 1", v));
    out.push_back(static_cast<int>(v));
  }
  return out;
}

// --allreduce entries: the collectives of comm/ (ring, tree, butterfly, onetoall, mpi, shm,
// auto) or "ps" for the parameter server.
std::vector<perf::RunConfig> configurations(const PredictOptions& o, perf::Sync sync) {
  perf::RunConfig base;
  base.batch_per_worker = o.batch_per_worker;
  base.sync = sync;
  base.servers = o.servers;
  base.comm_dtype = parse_dtype(o.comm_dtype);
  if (o.bucket_mb < 0) throw InputError(fmt::format("--bucket-mb must be >= 0, got {}", o.bucket_mb));
  base.bucket_bytes = static_cast<std::size_t>(o.bucket_mb * (1 << 20));
  base.double_buffering = o.double_buffering;
  base.accumulate = o.accumulate;
  base.hierarchical = o.hierarchical;
  std::vector<perf::RunConfig> out;
  for (const std::string& name : split(o.allreduce)) {
    perf::RunConfig c = base;
    if (name == "ps") {
      c.exchange = perf::Exchange::kParameterServer;
    } else {
      try {
        c.algorithm = comm::parse_algorithm(name);
      } catch (const InputError&) {
        throw InputError(
            fmt::format("unknown --allreduce '{}'; valid: ring, tree, butterfly, onetoall, mpi, shm, auto, ps "
                        "(parameter server)",
                        name));
      }
    }
    perf::validate(c);
    out.push_back(c);
  }
  return out;
}

int list_profiles() {
  const perf::ProfileNames n = perf::builtin_profile_names();
  fmt::print("profiles in {}\n  devices:  {}\n  links:    nvlink (the device's own), {}\n  networks: {}\n",
             perf::profile_library_dir(), fmt::join(n.devices, ", "), fmt::join(n.links, ", "),
             fmt::join(n.networks, ", "));
  fmt::print(
      "compose with '+': DEVICE, KxDEVICE-LINK (K per node), NETWORK, or a profile JSON file; e.g. "
      "8xp100-nvlink+eth-50g\n");
  return 0;
}

std::string describe_profile(const perf::Profile& p) {
  std::string s =
      fmt::format("{}: {} x{} per node ({})", p.name, p.device.name, p.node.accelerators, p.node.intra_link.name);
  s += p.network ? fmt::format(", nodes joined by {}", p.network->name) : ", one node";
  return s;
}

void print_breakdown(const perf::Workload& w, const perf::Profile& p, std::int64_t micro_batch,
                     const std::vector<perf::RunPrediction>& runs) {
  fmt::print("\ncompute per micro-batch of {} on {}:\n  {:<12} {:>6} {:>10} {:>10} {:>13}\n", micro_batch,
             p.device.name, "kind", "layers", "forward", "backward", "memory-bound");
  for (const perf::KindTime& k : perf::time_by_kind(w.layers, micro_batch, p.device)) {
    if (k.layers == 0) continue;
    fmt::print("  {:<12} {:>6} {:>10} {:>10} {:>13}\n", k.kind, k.layers, perf::format_seconds(k.forward),
               perf::format_seconds(k.backward), perf::format_seconds(k.memory_bound));
  }
  // The straggler term's factors, once per worker count.
  if (p.device.variation() <= 0) return;
  fmt::print("straggler wait per step = step variation {:.1f}% x compute x E[max of p standard normals]:",
             100 * p.device.variation());
  int shown = 0;
  const char* sep = " ";
  for (const perf::RunPrediction& r : runs) {
    if (r.config.workers == shown || r.step.straggler <= 0) continue;
    shown = r.config.workers;
    fmt::print("{}p = {}: {:.3f}, {}", sep, shown, perf::expected_max_of_normals(shown),
               perf::format_seconds(r.step.straggler));
    sep = "; ";
  }
  fmt::print("\n");
}

int run_predict(const PredictOptions& o) {
  if (o.list_profiles) return list_profiles();
  if (o.published) {
    fmt::print("{}", perf::format_published(perf::check_published_runs()));
    return 0;
  }
  if (o.profile.empty()) {
    throw InputError("--profile is required: e.g. --profile p100+ib-fdr (list them with --list-profiles)");
  }
  const perf::Sync sync = perf::parse_sync(o.sync);
  const std::vector<int> workers = parse_workers(o.workers);
  PredictOptions opts = o;
  if (sync != perf::Sync::kBsp && !o.allreduce_given) opts.allreduce = "ps";  // ASP and SSP need servers
  const std::vector<perf::RunConfig> configs = configurations(opts, sync);
  const perf::DatasetInfo& dataset = perf::dataset_info(o.dataset);
  const perf::Profile profile = perf::load_profile(o.profile);
  const perf::Workload workload = perf::describe_zoo_model(o.model, o.dataset);

  std::vector<perf::RunPrediction> runs;
  for (int w : workers) {
    for (perf::RunConfig c : configs) {
      c.workers = w;
      runs.push_back(perf::predict_run(workload, dataset, profile, c, o.epochs));
      if (w == 1) break;  // one worker trains alone: every exchange predicts the same
    }
  }
  if (!o.trace.empty()) {
    if (runs.size() != 1) {
      throw InputError(
          fmt::format("--trace writes one run's timeline, but {} configurations were predicted; give one "
                      "--workers value and one --allreduce",
                      runs.size()));
    }
    write_chrome_trace(o.trace, perf::predicted_trace(runs[0].step, runs[0].config.workers, o.trace_steps,
                                                      {{"model", o.model}, {"profile", profile.name}}));
  }
  if (!o.plot.empty()) {
    std::ofstream out(o.plot);
    if (!out) throw InputError(fmt::format("cannot write --plot file '{}'", o.plot));
    out << perf::scaling_svg(
        runs, fmt::format("{} on {}, batch {} per worker, {}", o.model, o.dataset, o.batch_per_worker, o.profile));
  }
  if (o.json) {
    nlohmann::json j = perf::runs_to_json(runs);
    j["model"] = o.model;
    j["parameters"] = workload.total_params();
    j["dataset"] = o.dataset;
    j["profile"] = perf::profile_to_json(profile);
    fmt::print("{}\n", j.dump(2));
    return 0;
  }
  const ModelCost cost = total_cost(workload.layers);
  fmt::print("{} on {} ({} training samples): {:.2f} M parameters, {:.2f} GFLOP forward + {:.2f} backward per sample\n",
             o.model, o.dataset, dataset.train_samples, workload.total_params() / 1e6, cost.forward_flops / 1e9,
             cost.backward_flops / 1e9);
  fmt::print("profile {}\n", describe_profile(profile));
  fmt::print("batch {} per worker{}, sync {}, gradients in {}", o.batch_per_worker,
             o.accumulate > 1 ? fmt::format(" in {} micro-batches", o.accumulate) : "", o.sync, o.comm_dtype);
  std::size_t buckets = 0;
  for (const perf::RunPrediction& r : runs) buckets = std::max(buckets, r.step.buckets.size());
  if (buckets > 0) {
    fmt::print(" in {} buckets of {} MiB{}{}", buckets, o.bucket_mb, o.double_buffering ? ", double buffering" : "",
               o.hierarchical ? ", hierarchical allreduce" : "");
  }
  if (o.allreduce.find("ps") != std::string::npos || sync != perf::Sync::kBsp) {
    fmt::print(", {} parameter-server shard(s)", o.servers);
  }
  fmt::print(", {} epochs\n\n{}", o.epochs, perf::format_table(runs));
  if (o.breakdown) print_breakdown(workload, profile, o.batch_per_worker / o.accumulate, runs);
  if (!o.plot.empty()) fmt::print("scaling chart: {}\n", o.plot);
  if (!o.trace.empty()) fmt::print("predicted trace: {}\n", o.trace);
  return 0;
}

}  // namespace

Action register_predict(CLI::App& app) {
  auto o = std::make_shared<PredictOptions>();
  CLI::App* p = app.add_subcommand(
      "predict",
      "Predict training time per step, per epoch and to the end, and what limits scaling (docs/perfmodel.md)");
  p->add_option("--model", o->model, fmt::format("Model: {}", fmt::join(model_names(), ", ")))->capture_default_str();
  p->add_option("--dataset", o->dataset, fmt::format("Dataset: {}", fmt::join(perf::dataset_info_names(), ", ")))
      ->capture_default_str();
  p->add_option("--workers", o->workers, "Worker counts to predict, comma-separated")->capture_default_str();
  p->add_option("--batch-per-worker", o->batch_per_worker, "Samples per worker per step")->capture_default_str();
  p->add_option("--profile", o->profile,
                "Hardware: DEVICE, KxDEVICE-LINK, NETWORK or a JSON file, joined by '+' (e.g. 8xp100-nvlink+eth-50g; "
                "see --list-profiles)");
  p->add_option("--sync", o->sync, "bsp, ssp or asp (ssp and asp: parameter server)")->capture_default_str();
  CLI::Option* allreduce =
      p->add_option("--allreduce", o->allreduce,
                    "Exchanges to compare, comma-separated: ring, tree, butterfly, onetoall, mpi, shm, auto, ps")
          ->capture_default_str();
  p->add_option("--servers", o->servers, "Parameter-server shards (with --allreduce ps)")->capture_default_str();
  p->add_option("--epochs", o->epochs, "Epochs to predict")->capture_default_str();
  p->add_option("--comm-dtype", o->comm_dtype, "Gradient type on the wire: f32, f16 or bf16")->capture_default_str();
  p->add_option("--bucket-mb", o->bucket_mb, "Gradient bucket size in MiB (0: one bucket per parameter)")
      ->capture_default_str();
  p->add_flag("--double-buffering", o->double_buffering, "Overlap each step's communication with the next step");
  p->add_option("--accumulate", o->accumulate, "Micro-batches per step")->capture_default_str();
  p->add_flag("--hierarchical", o->hierarchical,
              "Two-level allreduce: ring inside each node, the algorithm across nodes (as NCCL; dtrain's own "
              "collectives are flat)");
  p->add_flag("--json", o->json, "Print JSON for tools instead of the table");
  p->add_option("--plot", o->plot, "Write an SVG chart of time per epoch and efficiency against workers");
  p->add_flag("--list-profiles", o->list_profiles, "List the built-in hardware profiles");
  p->add_flag("--breakdown", o->breakdown, "Also print where a worker's compute time goes, per layer kind");
  p->add_option("--trace", o->trace,
                "Write the predicted timeline of --trace-steps steps as a Chrome trace, as dtrain train --trace writes "
                "a measured one (one --workers value and one --allreduce)");
  p->add_option("--trace-steps", o->trace_steps, "Steps in the --trace timeline")->capture_default_str();
  p->add_flag("--published", o->published, "Predict the published ResNet-50 runs (He et al., Goyal et al.)");
  return [p, o, allreduce]() {
    if (!p->parsed()) return -1;
    o->allreduce_given = allreduce->count() > 0;
    return run_predict(*o);
  };
}

}  // namespace dtrain::cli
