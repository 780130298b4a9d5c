// Pipeline-parallel training behind the same trainer (pipeline/stage_runner.h): every rank of a
// K-rank group is one stage of the model, loads the same batches, and runs its stage's part of
// the schedule; then the last stage tells the others the step's loss, accuracy and whether the
// loss was finite, so every stage stops alike on a NaN before touching its parameters, and each
// stage's optimizer updates its own parameters.
//
// Every rank keeps the whole model object (built from the same seed): gather_model() copies each
// stage's parameters and batch-norm statistics from the rank that trains them into every rank's
// copy, so evaluation, logs and export see the whole trained model (one broadcast per tensor,
// the model's bytes once per call).
#pragma once

#include <memory>
#include <vector>

#include "comm/communicator.h"
#include "nn/sequential.h"
#include "optim/optimizer.h"
#include "pipeline/p2p.h"
#include "pipeline/stage_runner.h"
#include "pipeline/stages.h"
#include "train/trainer.h"
#include "train/updater.h"

namespace dtrain {

struct PipelineSetup {
  pipeline::ScheduleKind schedule = pipeline::ScheduleKind::kOneFOneB;
  int micro_batches = 1;
  pipeline::StageBounds bounds;  // K + 1 layer indices (pipeline/stages.h)
  Shape sample;                  // the model's input per sample
  double timeout_s = 0;          // a stage that does not answer within it fails the others
};

class PipelineUpdater : public Updater {
 public:
  // `model` is the whole model; this rank (transport.rank()) trains stage rank of bounds, with
  // `optimizer` over that stage's parameters (stage_parameters()).
  PipelineUpdater(Sequential& model, Optimizer& optimizer, comm::Transport& transport, PipelineSetup setup);
  ~PipelineUpdater() override;

  StepResult update(const Batch& batch, std::int64_t iteration) override;

  // This rank's stage's parameters (build the optimizer over them).
  static std::vector<Variable> stage_parameters(const Sequential& model, const pipeline::StageBounds& bounds,
                                                int stage);
  // Every stage's parameters and buffers into every rank's whole model (a collective).
  void gather_model(comm::Communicator& comm);

  const pipeline::StageStep& last_step() const { return last_; }
  int stage() const { return stage_index_; }

 private:
  Sequential& model_;
  Optimizer& optimizer_;
  comm::Transport& transport_;
  PipelineSetup setup_;
  int stage_index_;
  std::shared_ptr<Sequential> stage_;
  std::unique_ptr<pipeline::P2P> p2p_;
  std::unique_ptr<pipeline::StageRunner> runner_;
  pipeline::StageStep last_;
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
