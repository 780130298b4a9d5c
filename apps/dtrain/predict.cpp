// `dtrain predict`: how long training takes, for which configuration, and what limits it, from
// the performance model (src/perfmodel, docs/perfmodel.md) and a hardware profile.
#include <fmt/format.h>

#include <fstream>

#include "apps/dtrain/commands.h"
#include "apps/dtrain/pipeline_flags.h"
#include "core/error.h"
#include "nn/models/models.h"
#include "perfmodel/layer_cost.h"
#include "perfmodel/pipeline_prediction.h"
#include "perfmodel/predicted_trace.h"
#include "perfmodel/profile.h"
#include "perfmodel/published.h"
#include "perfmodel/report.h"
#include "perfmodel/run_model.h"
#include "perfmodel/scaling_prediction.h"
#include "perfmodel/straggler.h"
#include "perfmodel/svg_plot.h"
#include "train/bn_statistics.h"

namespace dtrain::cli {
namespace {

// The query (perfmodel/scaling_prediction.h) and what the command does with its answer.
struct PredictOptions {
  perf::ScalingQuery query;
  std::string bn_stats = "running";
  bool json = false;
  std::string plot;
  bool list_profiles = false;
  bool published = false;
  bool breakdown = false;
  std::string trace;
  int trace_steps = 10;
  PipelineFlags pipeline;
  int tensor_parallel = 1;
};

// --pipeline K: one replica of a K-stage pipeline, the batch split in --micro-batches, the stages
// cut as dtrain train cuts them (pipeline_flags.h); with --tensor-parallel T each stage's layers
// split over T ranks as tensorparallel/plan.h splits them (one stage without --pipeline).
int predict_pipeline(const PredictOptions& o) {
  const perf::ScalingQuery& q = o.query;
  if (q.profile.empty()) throw InputError("dtrain predict needs --profile (see --list-profiles)");
  const perf::DatasetInfo& d = perf::dataset_info(q.dataset);
  Rng rng(0);
  auto model = make_model(q.model, ModelInput{d.channels, d.height, d.width, d.classes}, rng);
  const Shape sample{d.channels, d.height, d.width};
  const PipelineSetup setup = pipeline_stages(o.pipeline, *model, sample);
  perf::PipelineShape shape = pipeline_shape(setup, dynamic_cast<const Sequential&>(*model), q.batch_per_worker, 1);
  shape.tensor_parallel = o.tensor_parallel;
  perf::Profile profile = perf::load_profile(q.profile);
  profile.device = perf::at_precision(profile.device, profile.name, q.precision);
  const perf::Workload workload = perf::describe_model(*model, sample, q.model);
  const perf::PipelinePrediction p = perf::predict_pipeline(workload, profile, shape);
  if (o.json) {
    nlohmann::json stages = nlohmann::json::array();
    for (std::size_t s = 0; s < p.stages.size(); ++s) {
      stages.push_back({{"layers", shape.stage_layers[s]},
                        {"forward_s", p.stages[s].forward_s},
                        {"backward_s", p.stages[s].backward_s},
                        {"update_s", p.update_s[s]},
                        {"send_bytes", s < p.boundary_bytes.size() ? p.boundary_bytes[s] : 0.0},
                        {"send_s", s < p.transfer_s.size() ? p.transfer_s[s] : 0.0},
                        {"tensor_comm_s", p.tensor_comm_s[s]},
                        {"idle_s", p.clock.idle_s[s]}});
    }
    const nlohmann::json out{{"model", q.model},
                             {"dataset", q.dataset},
                             {"profile", profile.name},
                             {"batch", q.batch_per_worker},
                             {"pipeline", shape.stage_layers.size()},
                             {"micro_batches", shape.micro_batches},
                             {"tensor_parallel", shape.tensor_parallel},
                             {"ranks", shape.stage_layers.size() * static_cast<std::size_t>(shape.tensor_parallel)},
                             {"pipeline_schedule", pipeline::schedule_name(shape.schedule)},
                             {"stages", stages},
                             {"schedule_s", p.clock.step_s},
                             {"step_s", p.step_s},
                             {"bubble_fraction", p.clock.bubble_fraction()},
                             {"samples_per_s", static_cast<double>(q.batch_per_worker) / p.step_s}};
    fmt::print("{}\n", out.dump(2));
    return 0;
  }
  fmt::print("{} on {}, batch {} per step\nprofile {}\n{}", q.model, q.dataset, q.batch_per_worker,
             perf::describe_profile(profile), perf::describe_pipeline(p, shape));
  return 0;
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
  if (o.tensor_parallel < 1)
    throw InputError(fmt::format("--tensor-parallel must be at least 1, got {}", o.tensor_parallel));
  if (o.pipeline.stages != 1 || o.tensor_parallel != 1) return predict_pipeline(o);
  perf::ScalingQuery q = o.query;
  const BnStatisticsConfig bn = parse_bn_statistics(o.bn_stats);
  if (bn.mode == BnStatistics::kPopulation)
    q.population_chunks = bn.population_batches > 0 ? bn.population_batches : -1;
  const perf::ScalingPrediction prediction = perf::predict_scaling(q);
  const std::vector<perf::RunPrediction>& runs = prediction.runs;
  const perf::Profile& profile = prediction.profile;
  if (!o.trace.empty()) {
    if (runs.size() != 1) {
      throw InputError(
          fmt::format("--trace writes one run's timeline, but {} configurations were predicted; give one "
                      "--workers value and one --allreduce",
                      runs.size()));
    }
    write_chrome_trace(o.trace, perf::predicted_trace(runs[0].step, runs[0].config.workers, o.trace_steps,
                                                      {{"model", q.model}, {"profile", profile.name}}));
  }
  if (!o.plot.empty()) {
    std::ofstream out(o.plot);
    if (!out) throw InputError(fmt::format("cannot write --plot file '{}'", o.plot));
    out << perf::scaling_svg(runs, q.global_batch > 0 ? fmt::format("{} on {}, global batch {}, {}", q.model, q.dataset,
                                                                    q.global_batch, q.profile)
                                                      : fmt::format("{} on {}, batch {} per worker, {}", q.model,
                                                                    q.dataset, q.batch_per_worker, q.profile));
  }
  if (o.json) {
    fmt::print("{}\n", perf::scaling_json(q, prediction).dump(2));
    return 0;
  }
  const perf::Workload& workload = prediction.workload;
  const ModelCost cost = total_cost(workload.layers);
  fmt::print("{} on {} ({} training samples): {:.2f} M parameters, {:.2f} GFLOP forward + {:.2f} backward per sample\n",
             q.model, q.dataset, prediction.dataset.train_samples, workload.total_params() / 1e6,
             cost.forward_flops / 1e9, cost.backward_flops / 1e9);
  fmt::print("profile {}\n", perf::describe_profile(profile));
  const std::string batch = q.global_batch > 0
                                ? fmt::format("global batch {} (that / workers per worker)", q.global_batch)
                                : fmt::format("batch {} per worker", q.batch_per_worker);
  fmt::print("{}{}{}, sync {}, gradients in {}", batch,
             q.accumulate > 1 ? fmt::format(" in {} micro-batches", q.accumulate) : "",
             q.sync_batch_norm ? ", synchronized batch norm" : "", q.sync, q.comm_dtype);
  std::size_t buckets = 0;
  for (const perf::RunPrediction& r : runs) buckets = std::max(buckets, r.step.buckets.size());
  if (buckets > 0) {
    fmt::print(" in {} buckets of {} MiB{}{}", buckets, q.bucket_mb, q.double_buffering ? ", double buffering" : "",
               q.hierarchical ? ", hierarchical allreduce" : "");
  }
  if (q.allreduce.find("ps") != std::string::npos || prediction.sync != perf::Sync::kBsp) {
    fmt::print(", {} parameter-server shard(s)", q.servers);
  }
  if (prediction.sync == perf::Sync::kSsp) fmt::print(", staleness {}", q.staleness);
  if (q.slow_mode == "persistent") fmt::print(", one worker {}x slower", q.slow_factor);
  if (q.slow_mode == "random")
    fmt::print(", each worker-step {}x slower with probability {}", q.slow_factor, q.slow_prob);
  fmt::print(", {} epochs\n\n{}", q.epochs, perf::format_table(runs));
  if (o.breakdown) print_breakdown(workload, profile, runs.front().config.batch_per_worker / q.accumulate, runs);
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
  p->add_option("--model", o->query.model, fmt::format("Model: {}", fmt::join(model_names(), ", ")))
      ->capture_default_str();
  p->add_option("--dataset", o->query.dataset, fmt::format("Dataset: {}", fmt::join(perf::dataset_info_names(), ", ")))
      ->capture_default_str();
  p->add_option("--workers", o->query.workers, "Worker counts to predict, comma-separated")->capture_default_str();
  p->add_option("--batch-per-worker", o->query.batch_per_worker, "Samples per worker per step")->capture_default_str();
  p->add_option("--global-batch", o->query.global_batch,
                "Samples per step over all workers, the same at every worker count (each worker's batch is "
                "this / workers); replaces --batch-per-worker");
  p->add_option("--profile", o->query.profile,
                "Hardware: DEVICE, KxDEVICE-LINK, NETWORK or a JSON file, joined by '+' (e.g. 8xp100-nvlink+eth-50g; "
                "see --list-profiles)");
  p->add_option("--sync", o->query.sync, "bsp, ssp or asp (ssp and asp: parameter server)")->capture_default_str();
  CLI::Option* allreduce =
      p->add_option("--allreduce", o->query.allreduce,
                    "Exchanges to compare, comma-separated: ring, tree, butterfly, onetoall, mpi, shm, auto, ps")
          ->capture_default_str();
  p->add_option("--servers", o->query.servers, "Parameter-server shards (with --allreduce ps)")->capture_default_str();
  p->add_option("--staleness", o->query.staleness, "--sync ssp: the staleness bound S in clocks")
      ->capture_default_str();
  p->add_option("--slow-mode", o->query.slow_mode,
                "Workers slowed on purpose, as dtrain train's --slow-*: persistent (one worker at every step) or "
                "random (each worker-step with probability --slow-prob); priced per rule (bsp and allreduce wait "
                "for the slowest, ssp within its bound, asp never)");
  p->add_option("--slow-factor", o->query.slow_factor, "How much slower a slowed step is")->capture_default_str();
  p->add_option("--slow-prob", o->query.slow_prob, "--slow-mode random: the chance a worker-step is slowed");
  p->add_option("--epochs", o->query.epochs, "Epochs to predict")->capture_default_str();
  p->add_option("--comm-dtype", o->query.comm_dtype, "Gradient type on the wire: f32, f16 or bf16")
      ->capture_default_str();
  p->add_option("--bucket-mb", o->query.bucket_mb, "Gradient bucket size in MiB (0: one bucket per parameter)")
      ->capture_default_str();
  p->add_flag("--double-buffering", o->query.double_buffering, "Overlap each step's communication with the next step");
  p->add_option("--accumulate", o->query.accumulate, "Micro-batches per step")->capture_default_str();
  p->add_option("--bn-stats", o->bn_stats,
                "population[:N] prices the pass that recomputes batch norm's statistics after each epoch (over N "
                "micro-batches, or the training set), as dtrain train --bn-stats does")
      ->capture_default_str();
  p->add_flag("--sync-bn", o->query.sync_batch_norm,
              "Synchronized batch norm: two sums over the workers per batch-norm layer and micro-batch");
  p->add_flag("--hierarchical", o->query.hierarchical,
              "Two-level allreduce: ring inside each node, the algorithm across nodes (as NCCL; dtrain's own "
              "collectives are flat)");
  p->add_flag("--json", o->json, "Print JSON for tools instead of the table");
  p->add_option("--plot", o->plot, "Write an SVG chart of time per epoch and efficiency against workers");
  p->add_flag("--list-profiles", o->list_profiles, "List the built-in hardware profiles");
  add_pipeline_flags(*p, o->pipeline);
  p->add_option("--tensor-parallel", o->tensor_parallel,
                "Tensor-parallel ranks T (per pipeline stage): linear layers split in column -> row pairs, "
                "convolutions by output channel (tensorparallel/plan.h); the job runs K x T ranks")
      ->capture_default_str();
  p->add_option("--precision", o->query.precision,
                "Arithmetic of the convolutions and linear layers: f32, tf32, bf16, f16 or fp8 (the profile's "
                "device.precisions rates; activations in 16 bits for bf16, f16, fp8; master weights and the "
                "optimizer in f32)")
      ->capture_default_str();
  p->add_flag("--breakdown", o->breakdown, "Also print where a worker's compute time goes, per layer kind");
  p->add_option("--trace", o->trace,
                "Write the predicted timeline of --trace-steps steps as a Chrome trace, as dtrain train --trace writes "
                "a measured one (one --workers value and one --allreduce)");
  p->add_option("--trace-steps", o->trace_steps, "Steps in the --trace timeline")->capture_default_str();
  p->add_flag("--published", o->published, "Predict the published ResNet-50 runs (He et al., Goyal et al.)");
  return [p, o, allreduce]() {
    if (!p->parsed()) return -1;
    o->query.allreduce_given = allreduce->count() > 0;
    return run_predict(*o);
  };
}

}  // namespace dtrain::cli
