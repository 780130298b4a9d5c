// A pipeline-parallel step priced from a profile: each stage's forward and backward per
// micro-batch from its layers (layer_cost.h), each boundary's transfer from the intra-node link
// (alpha + bytes / bandwidth of one micro-batch's activations, f32), run on the schedule's clock
// (pipeline_time.h) so that an unbalanced pipeline is priced by the waits its slowest stage
// causes; then, with R data-parallel replicas, each stage's allreduce of its gradients over its
// replicas (allreduce_time.h: one per gradient bucket of the stage's parameters, as
// comm/bucket_plan.h groups them, each gradient copied into a bucket shared with others at the
// calibrated gradient copy), and the slowest stage's optimizer update (every stage at once).
// With T tensor-parallel ranks per stage, each stage's layers are priced as one of its T ranks
// runs them, their collectives included (tensor_parallel_cost.h), and a stage's allreduce over
// the replicas carries its rank's share of the parameters:
//   step = clock(f_s, b_s, t_s; schedule, m) + max_s(allreduce_R(params_s) + params_s / update rate)
//          + the wait for the slowest of a stage's T tensor-parallel ranks (T > 1)
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "comm/algorithm.h"
#include "perfmodel/pipeline_time.h"
#include "perfmodel/profile.h"
#include "perfmodel/workload.h"
#include "tensor/dtype.h"

namespace dtrain::perf {

struct PipelineShape {
  pipeline::ScheduleKind schedule = pipeline::ScheduleKind::kOneFOneB;
  int micro_batches = 1;
  std::int64_t batch = 0;  // samples per step (all micro-batches)
  // Stage s holds the workload layers whose path is, or lies under, one of stage_layers[s]
  // (the names of the chain's top-level layers, pipeline/stages.h).
  std::vector<std::vector<std::string>> stage_layers;
  int replicas = 1;  // data-parallel replicas of the pipeline, each with its own `batch`
  comm::Algorithm allreduce = comm::Algorithm::kRing;  // the replicas' gradient allreduce
  DType comm_dtype = DType::kF32;                      // its buckets (parallel/buckets.h)
  std::size_t bucket_bytes = std::size_t{1} << 20;
  // Tensor-parallel ranks T per stage (tensor_parallel_cost.h): the job runs K x T x replicas ranks.
  int tensor_parallel = 1;
};

struct PipelinePrediction {
  std::vector<perf::StageTime> stages;  // per micro-batch
  std::vector<double> transfer_s;       // per boundary, per message
  std::vector<double> boundary_bytes;   // per boundary, per message
  std::vector<double> update_s;         // per stage
  std::vector<double> allreduce_s;      // per stage: its gradients over the replicas (0 for one)
  std::vector<double> tensor_comm_s;    // per stage, per micro-batch: its tensor-parallel collectives
  perf::PipelineTiming clock;
  double tensor_sync_s = 0;  // the wait for the slowest tensor-parallel rank (0 for T = 1)
  double step_s = 0;         // clock.step_s + the slowest stage's allreduce and update + tensor_sync_s
};

// InputError when the batch is not a multiple of the micro-batches or a workload layer belongs
// to no stage.
PipelinePrediction predict_pipeline(const Workload& workload, const Profile& profile, const PipelineShape& shape);

// The table `dtrain predict --pipeline` prints: per stage, its layers' time, the transfer, the
// idle share; then the step, the bubble and the throughput.
std::string describe_pipeline(const PipelinePrediction& p, const PipelineShape& shape);

}  // namespace dtrain::perf
