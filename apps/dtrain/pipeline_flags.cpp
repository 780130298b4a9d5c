#include "apps/dtrain/pipeline_flags.h"

#include <fmt/format.h>

#include "calibration/pipeline_report.h"
#include "core/error.h"
#include "core/split.h"
#include "perfmodel/profile.h"
#include "perfmodel/workload.h"

namespace dtrain::cli {

void add_pipeline_flags(CLI::App& command, PipelineFlags& flags) {
  command
      .add_option("--pipeline", flags.stages,
                  "Pipeline stages K: split the model by layers over K ranks, one stage per rank; mpirun -np P runs "
                  "P/K data-parallel replicas of the pipeline")
      ->capture_default_str();
  command
      .add_option("--micro-batches", flags.micro_batches,
                  "--pipeline: micro-batches M per step (divides --batch); the bubble is (K-1)/(M+K-1) of a step")
      ->capture_default_str();
  command
      .add_option("--pipeline-schedule", flags.schedule,
                  "--pipeline: 1f1b (at most K-s micro-batches' activations on stage s) or gpipe (fill-drain, M)")
      ->capture_default_str();
  command.add_option("--split", flags.split,
                     "--pipeline: the layers where stages 2..K start, comma-separated (e.g. f2); default: stages "
                     "balanced by the layers' forward and backward FLOPs");
}

namespace {

void refuse(bool given, const std::string& what) {
  if (given)
    throw InputError(fmt::format("--pipeline does not combine with {} yet: drop it, or run without --pipeline", what));
}

}  // namespace

PipelineSetup pipeline_stages(const PipelineFlags& f, Module& model, const Shape& sample) {
  if (f.micro_batches < 1) throw InputError(fmt::format("--micro-batches must be at least 1, got {}", f.micro_batches));
  auto* chain = dynamic_cast<Sequential*>(&model);
  if (chain == nullptr)
    throw InputError(fmt::format(
        "--pipeline splits a chain of layers (mlp, lenet, the CIFAR ResNets); this model ({}) is not one yet",
        model.type()));
  PipelineSetup setup;
  setup.schedule = pipeline::parse_schedule(f.schedule);
  setup.micro_batches = f.micro_batches;
  setup.sample = sample;
  if (!f.split.empty()) {
    const auto names = split_list(f.split, ',');
    if (static_cast<int>(names.size()) != f.stages - 1)
      throw InputError(fmt::format("--split names {} layers, but --pipeline {} needs {} (where stages 2..{} start)",
                                   names.size(), f.stages, f.stages - 1, f.stages));
    setup.bounds = pipeline::split_at(*chain, names);
  } else {
    setup.bounds = pipeline::split_balanced(pipeline::layer_flops(*chain, sample), f.stages);
  }
  return setup;
}

std::optional<PipelineSetup> pipeline_setup(const PipelineFlags& f, const ProcessGroup& group, Module& model,
                                            const Shape& sample, double timeout_s, const PipelineRunOptions& run) {
  if (f.stages == 1) {
    if (f.micro_batches != 1 || !f.split.empty() || f.schedule != "1f1b")
      throw InputError("--micro-batches, --split and --pipeline-schedule set up a pipeline: add --pipeline K (K >= 2)");
    return std::nullopt;
  }
  if (f.stages < 1) throw InputError(fmt::format("--pipeline must be at least 1, got {}", f.stages));
  if (group.size % f.stages != 0)
    throw InputError(
        fmt::format("--pipeline {}: the {} ranks do not divide into {}-stage pipelines; start "
                    "mpirun -np {} (a multiple of K)",
                    f.stages, group.size, f.stages, f.stages));
  refuse(run.parameter_server, "--mode ps");
  refuse(run.accumulate != 1, "--accumulate (use --micro-batches)");
  refuse(run.double_buffering, "--double-buffering");
  refuse(run.sync_bn, "--sync-bn");
  refuse(run.bn_stats != "running", "--bn-stats " + run.bn_stats);
  PipelineSetup setup = pipeline_stages(f, model, sample);
  setup.timeout_s = timeout_s;
  if (run.allreduce == comm::Algorithm::kShm || run.allreduce == comm::Algorithm::kMpi)
    throw InputError(
        fmt::format("--allreduce {} is not offered between a pipeline's replicas (a subset of the ranks): "
                    "use ring, tree, butterfly or onetoall",
                    comm::algorithm_name(run.allreduce)));
  if (run.allreduce != comm::Algorithm::kAuto) setup.allreduce = run.allreduce;
  setup.comm_dtype = run.comm_dtype;
  setup.bucket_bytes = run.bucket_bytes;
  return setup;
}

perf::PipelineShape pipeline_shape(const PipelineSetup& setup, const Sequential& chain, std::int64_t batch,
                                   int replicas) {
  perf::PipelineShape shape;
  shape.schedule = setup.schedule;
  shape.micro_batches = setup.micro_batches;
  shape.batch = batch;
  shape.replicas = replicas;
  shape.allreduce = setup.allreduce;
  shape.comm_dtype = setup.comm_dtype;
  shape.bucket_bytes = setup.bucket_bytes;
  for (std::size_t s = 0; s + 1 < setup.bounds.size(); ++s) {
    shape.stage_layers.emplace_back();
    for (std::size_t i = setup.bounds[s]; i < setup.bounds[s + 1]; ++i)
      shape.stage_layers.back().push_back(chain.layer_name(i));
  }
  return shape;
}

std::unique_ptr<Extension> make_pipeline_report(const std::string& profile, const PipelineSetup& setup,
                                                Sequential& chain, const std::string& model_name, std::int64_t batch,
                                                int replicas, int stage, bool print) {
  const perf::PipelineShape shape = pipeline_shape(setup, chain, batch, replicas);
  const perf::Profile p = perf::load_profile(profile);
  perf::PipelinePrediction prediction =
      perf::predict_pipeline(perf::describe_model(chain, setup.sample, model_name), p, shape);
  if (print) fmt::print("predicted on {}: {}", p.name, perf::describe_pipeline(prediction, shape));
  return std::make_unique<perf::PipelineReport>(std::move(prediction), stage, print);
}

}  // namespace dtrain::cli
