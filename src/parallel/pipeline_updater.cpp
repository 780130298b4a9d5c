#include "parallel/pipeline_updater.h"

#include <fmt/format.h>

#include <array>
#include <cmath>

#include "core/error.h"
#include "core/timer.h"

namespace dtrain {

namespace {

// The step's outcome from the last stage to the others, after the schedule's transfers: the
// micro-batches' tags end below it (the runner allows at most kMaxP2PTag micro-batches).
constexpr int kOutcomeTag = pipeline::kMaxP2PTag;

}  // namespace

PipelineUpdater::PipelineUpdater(Sequential& model, Optimizer& optimizer, comm::Transport& transport,
                                 PipelineSetup setup)
    : model_(model),
      optimizer_(optimizer),
      transport_(transport),
      setup_(std::move(setup)),
      stage_index_(transport.rank()) {
  const int k = static_cast<int>(setup_.bounds.size()) - 1;
  if (k != transport.size())
    throw InputError(
        fmt::format("--pipeline {} needs exactly {} ranks, one per stage; this run has {}", k, k, transport.size()));
  const auto shapes = pipeline::boundary_shapes(model_, setup_.bounds, setup_.sample);
  stage_ = pipeline::make_stage(model_, setup_.bounds[stage_index_], setup_.bounds[stage_index_ + 1]);
  p2p_ = std::make_unique<pipeline::P2P>(transport_, setup_.timeout_s);
  runner_ = std::make_unique<pipeline::StageRunner>(
      *stage_, *p2p_,
      pipeline::StageConfig{setup_.schedule, k, stage_index_, setup_.micro_batches, stage_index_ - 1, stage_index_ + 1,
                            shapes[static_cast<std::size_t>(stage_index_)]});
}

PipelineUpdater::~PipelineUpdater() = default;

std::vector<Variable> PipelineUpdater::stage_parameters(const Sequential& model, const pipeline::StageBounds& bounds,
                                                        int stage) {
  return pipeline::make_stage(model, bounds.at(stage), bounds.at(stage + 1))->parameters();
}

StepResult PipelineUpdater::update(const Batch& batch, std::int64_t iteration) {
  StepResult r;
  optimizer_.zero_grad();
  last_ = runner_->run(batch.x, batch.y, label_smoothing());
  // Loss, correct, samples and finiteness from the last stage to every other.
  const int k = transport_.size();
  const Stopwatch shared;
  std::array<double, 4> outcome{last_.loss, static_cast<double>(last_.correct), static_cast<double>(last_.samples),
                                last_.loss_finite ? 1.0 : 0.0};
  const auto deadline = comm::Deadline::after(setup_.timeout_s);
  if (stage_index_ == k - 1) {
    std::vector<comm::Request> sends;
    for (int s = 0; s < k - 1; ++s) sends.push_back(transport_.isend(outcome.data(), sizeof(outcome), s, kOutcomeTag));
    transport_.waitall(sends, deadline, "pipeline: the step's loss to the other stages");
  } else {
    transport_.recv(outcome.data(), sizeof(outcome), k - 1, kOutcomeTag, deadline,
                    "pipeline: the step's loss from the last stage");
  }
  r.loss = outcome[0];
  r.correct = static_cast<std::int64_t>(outcome[1]);
  r.samples = static_cast<std::int64_t>(outcome[2]);
  if (outcome[3] == 0.0) {
    throw NumericError(fmt::format(
        "the loss became {} at step {} (0-based global iteration); training stopped before the update on every "
        "stage. Lower --lr, add --warmup-epochs, or check the input data",
        r.loss, iteration));
  }
  r.times.forward = last_.forward_s;
  r.times.backward = last_.backward_s;
  r.times.comm = last_.wait_s + shared.seconds();
  const Stopwatch update;
  optimizer_.step();
  r.times.update = update.seconds();
  return r;
}

void PipelineUpdater::gather_model(comm::Communicator& comm) {
  const int k = static_cast<int>(setup_.bounds.size()) - 1;
  for (int s = 0; s < k; ++s) {
    const auto stage = pipeline::make_stage(model_, setup_.bounds[s], setup_.bounds[s + 1]);
    for (auto& [name, p] : stage->named_parameters()) {
      Tensor plain = p.data().to_plain();
      comm.broadcast(plain.raw_data(), plain.nbytes(), s);
      if (s != stage_index_ && !plain.shares_storage_with(p.data())) p.data().copy_from(plain);
    }
    for (auto& [name, t] : stage->named_buffers()) {
      Tensor plain = t.to_plain();
      comm.broadcast(plain.raw_data(), plain.nbytes(), s);
      if (s != stage_index_ && !plain.shares_storage_with(t)) t.copy_from(plain);
    }
  }
}

}  // namespace dtrain
