// `dtrain train --pipeline K --micro-batches M [--pipeline-schedule 1f1b|gpipe] [--split L,...]`:
// pipeline-parallel training (src/pipeline, parallel/pipeline_updater.h) under mpirun -np K, one
// stage per rank. Every rank loads the same batches; rank 0 evaluates the whole model, gathered
// from the stages after each epoch, and writes the log.
#pragma once

#include <CLI/CLI.hpp>
#include <memory>
#include <optional>
#include <string>

#include "apps/dtrain/distributed.h"
#include "parallel/pipeline_updater.h"
#include "perfmodel/pipeline_prediction.h"

namespace dtrain::cli {

struct PipelineFlags {
  int stages = 1;
  int micro_batches = 1;
  std::string schedule = "1f1b";
  std::string split;  // the layers where stages 2..K start, comma-separated; empty: balanced
};

void add_pipeline_flags(CLI::App& command, PipelineFlags& flags);

// What the flags ask for: nullopt for --pipeline 1. P ranks run P/K replicas of the K-stage
// pipeline. InputError naming the fix for a pipeline flag without --pipeline, ranks not divisible
// by K, a model that is not a chain of layers, more stages than layers, a --split layer the model
// lacks, an allreduce a subset of the ranks cannot run (shm, mpi), and the run options a pipeline
// does not combine with yet (named in the error).
struct PipelineRunOptions {
  bool parameter_server = false;
  int accumulate = 1;
  bool double_buffering = false;
  bool sync_bn = false;
  std::string bn_stats = "running";
  comm::Algorithm allreduce = comm::Algorithm::kAuto;  // the replicas' gradient allreduce (auto: ring)
  DType comm_dtype = DType::kF32;                      // and its buckets
  std::size_t bucket_bytes = std::size_t{1} << 20;
};
// The schedule, micro-batches and stage cut the flags ask for (K >= 2), without the run's checks:
// what `dtrain predict --pipeline` prices. InputError for a model that is not a chain of layers,
// more stages than layers or a --split layer the model lacks.
PipelineSetup pipeline_stages(const PipelineFlags& flags, Module& model, const Shape& sample);

std::optional<PipelineSetup> pipeline_setup(const PipelineFlags& flags, const ProcessGroup& group, Module& model,
                                            const Shape& sample, double timeout_s, const PipelineRunOptions& run);

// The model's view of a pipeline run: its shape for perf::predict_pipeline (the stages' layer
// names from `chain`, `batch` per replica).
perf::PipelineShape pipeline_shape(const PipelineSetup& setup, const Sequential& chain, std::int64_t batch,
                                   int replicas);

// `dtrain train --pipeline --profile FILE`: prints the predicted step's table (print: rank 0) and
// returns the extension that puts predicted beside measured after each epoch.
std::unique_ptr<Extension> make_pipeline_report(const std::string& profile, const PipelineSetup& setup,
                                                Sequential& chain, const std::string& model_name, std::int64_t batch,
                                                int replicas, int stage, bool print);

}  // namespace dtrain::cli
