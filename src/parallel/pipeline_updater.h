// Pipeline-parallel training behind the same trainer (pipeline/stage_runner.h), with R data-
// parallel replicas of a K-stage pipeline on P = R K ranks: world rank w is stage w mod K of
// replica w / K. The K stages of a replica load the same batches (the replica's shard) and run
// the schedule; the replica's last stage then tells its other stages the step's loss, accuracy
// and whether the loss was finite; each stage averages its gradients with the same stage of the
// other replicas through gradient buckets (parallel/buckets.h: fused, f16/bf16 on the wire if
// asked, checked for NaN and Inf after the sum), after the schedule's last backward; a replica
// whose loss was not finite poisons its first gradient with a NaN, so every rank of the job stops
// alike before any update; then each stage's optimizer updates its own parameters.
//
// Every rank keeps the whole model object (built from the same seed): gather_model() copies each
// stage's parameters and batch-norm statistics from replica 0's rank of that stage into every
// rank's copy, so evaluation, logs and export see the whole trained model (one broadcast per
// tensor, the model's bytes once per call).
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "comm/communicator.h"
#include "comm/sub_transport.h"
#include "nn/sequential.h"
#include "optim/optimizer.h"
#include "parallel/buckets.h"
#include "pipeline/p2p.h"
#include "pipeline/stage_runner.h"
#include "pipeline/stages.h"
#include "train/checkpointer.h"
#include "train/trainer.h"
#include "train/updater.h"

namespace dtrain {

struct PipelineSetup {
  pipeline::ScheduleKind schedule = pipeline::ScheduleKind::kOneFOneB;
  int micro_batches = 1;
  pipeline::StageBounds bounds;  // K + 1 layer indices (pipeline/stages.h)
  Shape sample;                  // the model's input per sample
  double timeout_s = 0;          // a stage that does not answer within it fails the others
  // The replicas' gradient allreduce (kShm and kMpi are not offered on a subset of the ranks),
  // through gradient buckets of about bucket_bytes with comm_dtype on the wire (parallel/buckets.h).
  comm::Algorithm allreduce = comm::Algorithm::kRing;
  DType comm_dtype = DType::kF32;
  std::size_t bucket_bytes = std::size_t{1} << 20;

  int stages() const { return static_cast<int>(bounds.size()) - 1; }
};

class PipelineUpdater : public Updater {
 public:
  // `model` is the whole model; this rank (world.rank()) trains stage world.rank() mod K of
  // replica world.rank() / K, with `optimizer` over that stage's parameters (stage_parameters()).
  PipelineUpdater(Sequential& model, Optimizer& optimizer, comm::Transport& world, PipelineSetup setup);
  ~PipelineUpdater() override;

  StepResult update(const Batch& batch, std::int64_t iteration) override;

  // Stage `stage`'s parameters (build the optimizer over them).
  static std::vector<Variable> stage_parameters(const Sequential& model, const pipeline::StageBounds& bounds,
                                                int stage);
  // Every stage's parameters and buffers into every rank's whole model (a collective of `world`).
  void gather_model(comm::Communicator& world);
  // Sums values over the replicas of this rank's stage, in rank order (the same bits on each):
  // the trainer's epoch totals, each replica counted once.
  void sum_over_replicas(std::vector<double>& values);
  // The replicas of this rank's stage as a checkpoint group: replica 0 writes the stage's part,
  // and on resume sends what it read to the others (train/checkpointer.h).
  CheckpointGroup checkpoint_group();
  // The newest step every stage can resume from: the least of the ranks' `newest` (a collective
  // of `world`), so that all stages restore one consistent step.
  static std::int64_t common_step(std::int64_t newest, comm::Communicator& world);

  const pipeline::StageStep& last_step() const { return last_; }
  // Receives each step's actions (name, category, wall-clock start and end) for a trace
  // (train/trace_recorder.h: schedule_span).
  using ScheduleSpan = std::function<void(std::string, std::string, double, double)>;
  void set_trace(ScheduleSpan span) { trace_ = std::move(span); }
  int stage() const { return stage_index_; }
  int replica() const { return replica_; }
  int replicas() const { return replicas_; }

 private:
  void average_with_replicas(bool& finite);
  void trace_step(double shared_s) const;

  Sequential& model_;
  Optimizer& optimizer_;
  PipelineSetup setup_;
  int stage_index_, replica_, replicas_;
  std::unique_ptr<comm::SubTransport> pipeline_transport_;  // this replica's K stages
  std::unique_ptr<comm::SubTransport> replica_transport_;   // this stage's R replicas
  std::unique_ptr<comm::Communicator> replica_comm_;
  std::shared_ptr<Sequential> stage_;
  std::unique_ptr<pipeline::P2P> p2p_;
  std::unique_ptr<pipeline::StageRunner> runner_;
  std::unique_ptr<GradientBuckets> buckets_;  // the stage's gradients, for the replicas' allreduce
  pipeline::StageStep last_;
  ScheduleSpan trace_;
};

// Runs gather_model through `run` (the communication worker) at each epoch's end, before the
// extensions after it (the evaluator).
class PipelineGatherExtension : public Extension {
 public:
  using RunOnComm = std::function<void(const std::function<void(comm::Communicator&)>&)>;
  PipelineGatherExtension(PipelineUpdater& updater, RunOnComm run) : updater_(updater), run_(std::move(run)) {}
  void on_epoch_end(TrainerState&) override {
    run_([this](comm::Communicator& c) { updater_.gather_model(c); });
  }

 private:
  PipelineUpdater& updater_;
  RunOnComm run_;
};

}  // namespace dtrain
