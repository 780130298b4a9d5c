#include "parallel/pipeline_updater.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>

#include "comm/exact_sum.h"
#include "core/error.h"
#include "core/timer.h"

namespace dtrain {

namespace {

// The step's outcome from the last stage to the others, after the schedule's transfers: the
// micro-batches' tags end below it (the runner allows at most kMaxP2PTag micro-batches).
constexpr int kOutcomeTag = pipeline::kMaxP2PTag;

std::vector<int> ranks(int first, int count, int stride) {
  std::vector<int> out;
  for (int i = 0; i < count; ++i) out.push_back(first + i * stride);
  return out;
}

}  // namespace

PipelineUpdater::PipelineUpdater(Sequential& model, Optimizer& optimizer, comm::Transport& world, PipelineSetup setup)
    : model_(model), optimizer_(optimizer), setup_(std::move(setup)) {
  const int k = setup_.stages();
  if (world.size() % k != 0)
    throw InputError(
        fmt::format("--pipeline {}: the {} ranks do not divide into {}-stage pipelines; start mpirun -np "
                    "with a multiple of {}",
                    k, world.size(), k, k));
  stage_index_ = world.rank() % k;
  replica_ = world.rank() / k;
  replicas_ = world.size() / k;
  pipeline_transport_ = std::make_unique<comm::SubTransport>(world, ranks(replica_ * k, k, 1));
  replica_transport_ = std::make_unique<comm::SubTransport>(world, ranks(stage_index_, replicas_, k));
  comm::CommOptions options;
  options.timeout_seconds = setup_.timeout_s;
  replica_comm_ = std::make_unique<comm::Communicator>(*replica_transport_, options);
  const auto shapes = pipeline::boundary_shapes(model_, setup_.bounds, setup_.sample);
  stage_ = pipeline::make_stage(model_, setup_.bounds[stage_index_], setup_.bounds[stage_index_ + 1]);
  if (replicas_ > 1) {
    std::vector<Variable> params;
    std::vector<std::string> names;
    for (auto& [name, p] : stage_->named_parameters()) {
      params.push_back(p);
      names.push_back(name);
    }
    buckets_ = std::make_unique<GradientBuckets>(params, std::move(names), setup_.bucket_bytes, setup_.comm_dtype, 1,
                                                 1.0 / replicas_);
  }
  p2p_ = std::make_unique<pipeline::P2P>(*pipeline_transport_, setup_.timeout_s);
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

void PipelineUpdater::average_with_replicas(bool& finite) {
  if (buckets_->num_buckets() == 0) {
    // A stage without parameters (mlp split at f1: a lone flatten) has no sums to carry the
    // verdict: the replicas agree on it alone (every replica's stage has the same parameters).
    float verdict = finite ? 0.0F : std::numeric_limits<float>::quiet_NaN();
    finite = replica_comm_->allreduce_scaled(&verdict, 1, 1.0F, setup_.allreduce);
    return;
  }
  auto params = stage_->parameters();
  std::vector<std::size_t> released;
  const auto take = [&released](const std::vector<std::size_t>& b) {
    released.insert(released.end(), b.begin(), b.end());
  };
  bool poison = !finite;  // the loss's verdict rides along: a NaN in a sum fails every replica
  for (std::size_t i = 0; i < params.size(); ++i) {
    if (!params[i].grad().defined()) continue;  // complete() zeroes it
    // The bucket adopts a large gradient that nothing else holds (buckets.h): the parameter
    // gives its handle up first, and gets the mean back below.
    Tensor g = params[i].grad();
    params[i].zero_grad();
    if (poison) {
      g = g.to_plain().clone();
      g.data<float>()[0] = std::numeric_limits<float>::quiet_NaN();
      poison = false;
    }
    take(buckets_->add(i, g, 0));
  }
  take(buckets_->complete(0));
  for (std::size_t b : released) buckets_->reduce(*replica_comm_, b, 0, setup_.allreduce);
  finite = buckets_->non_finite_parameter(0).empty();
  for (std::size_t i = 0; i < params.size(); ++i) params[i].set_grad(buckets_->gradient(i, 0));
}

StepResult PipelineUpdater::update(const Batch& batch, std::int64_t iteration) {
  StepResult r;
  optimizer_.zero_grad();
  if (buckets_) buckets_->begin(0);  // the first micro-batch's gradients may go straight into their slots
  last_ = runner_->run(batch.x, batch.y, label_smoothing());
  // Loss, correct, samples and finiteness from the replica's last stage to its other stages.
  const int k = setup_.stages();
  const Stopwatch shared;
  std::array<double, 4> outcome{last_.loss, static_cast<double>(last_.correct), static_cast<double>(last_.samples),
                                last_.loss_finite ? 1.0 : 0.0};
  const auto deadline = comm::Deadline::after(setup_.timeout_s);
  comm::Transport& t = *pipeline_transport_;
  if (stage_index_ == k - 1) {
    std::vector<comm::Request> sends;
    for (int s = 0; s < k - 1; ++s) sends.push_back(t.isend(outcome.data(), sizeof(outcome), s, kOutcomeTag));
    t.waitall(sends, deadline, "pipeline: the step's loss to the other stages");
  } else {
    t.recv(outcome.data(), sizeof(outcome), k - 1, kOutcomeTag, deadline,
           "pipeline: the step's loss from the last stage");
  }
  r.loss = outcome[0];
  r.correct = static_cast<std::int64_t>(outcome[1]);
  r.samples = static_cast<std::int64_t>(outcome[2]);
  bool finite = outcome[3] != 0.0;
  if (replicas_ > 1) average_with_replicas(finite);
  const double shared_s = shared.seconds();
  if (trace_) trace_step(shared_s);
  if (!finite) {
    throw NumericError(fmt::format(
        "the loss or a gradient became non-finite at step {} (0-based global iteration; this replica's loss {}); "
        "training stopped before the update on every stage. Lower --lr, add --warmup-epochs, or check the input data",
        iteration, r.loss));
  }
  r.times.forward = last_.forward_s;
  r.times.backward = last_.backward_s;
  // Waiting for activations and gradients, the loss from the last stage and the replicas' sum.
  r.times.comm = last_.wait_s + shared_s;
  const Stopwatch update;
  optimizer_.step();
  r.times.update = update.seconds();
  return r;
}

void PipelineUpdater::trace_step(double shared_s) const {
  using pipeline::ActionKind;
  double end = 0;
  for (const pipeline::ActionRecord& a : last_.timeline) {
    const int i = a.action.micro_batch;
    end = std::max(end, a.end_s);
    std::string name, category;
    switch (a.action.kind) {
      case ActionKind::kForward:
        name = fmt::format("F{}", i), category = "forward";
        break;
      case ActionKind::kBackward:
        name = fmt::format("B{}", i), category = "backward";
        break;
      case ActionKind::kRecvActivation:
        name = fmt::format("wait: activation {} from stage {}", i, stage_index_ - 1), category = "wait";
        break;
      case ActionKind::kRecvGradient:
        name = fmt::format("wait: gradient {} from stage {}", i, stage_index_ + 1), category = "wait";
        break;
      default:
        continue;  // sends are posted, not waited for
    }
    trace_(name, category, last_.wall_start + a.start_s, last_.wall_start + a.end_s);
  }
  const double sends = last_.wall_start + end, finished = last_.wall_start + last_.seconds;
  if (finished > sends) trace_("wait: sends to finish", "wait", sends, finished);
  trace_(replicas_ > 1 ? "loss from the last stage, replicas' allreduce" : "loss from the last stage", "comm", finished,
         finished + shared_s);
}

void PipelineUpdater::sum_over_replicas(std::vector<double>& values) {
  comm::sum_in_rank_order(*replica_comm_, values);
}

CheckpointGroup PipelineUpdater::checkpoint_group() {
  CheckpointGroup g;
  g.rank = replica_;
  g.size = replicas_;
  comm::Communicator* c = replica_comm_.get();
  g.allgather = [c](void* all, std::size_t bytes_per_rank) { c->allgather(all, bytes_per_rank); };
  g.broadcast = [c](void* data, std::size_t bytes) { c->broadcast(data, bytes, 0); };
  return g;
}

std::int64_t PipelineUpdater::common_step(std::int64_t newest, comm::Communicator& world) {
  std::vector<std::int64_t> all(static_cast<std::size_t>(world.size()));
  world.allgather(&newest, all.data(), sizeof newest);
  return *std::min_element(all.begin(), all.end());
}

void PipelineUpdater::gather_model(comm::Communicator& world) {
  const int k = setup_.stages();
  for (int s = 0; s < k; ++s) {
    // World rank s is replica 0's stage s; the replicas hold the same values.
    const auto stage = pipeline::make_stage(model_, setup_.bounds[s], setup_.bounds[s + 1]);
    for (auto& [name, p] : stage->named_parameters()) {
      Tensor plain = p.data().to_plain();
      world.broadcast(plain.raw_data(), plain.nbytes(), s);
      if (world.rank() != s && !plain.shares_storage_with(p.data())) p.data().copy_from(plain);
    }
    for (auto& [name, buffer] : stage->named_buffers()) {
      Tensor plain = buffer.to_plain();
      world.broadcast(plain.raw_data(), plain.nbytes(), s);
      if (world.rank() != s && !plain.shares_storage_with(buffer)) buffer.copy_from(plain);
    }
  }
}

}  // namespace dtrain
