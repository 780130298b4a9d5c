#include "ps/ps_updater.h"

#include <fmt/format.h>

#include <utility>

#include "core/error.h"
#include "core/timer.h"
#include "parallel/buckets.h"

namespace dtrain::ps {

PsUpdater::PsUpdater(Module& model, Optimizer& optimizer, comm::Transport& transport, const PsConfig& config,
                     bool resumed)
    : StandardUpdater(model, optimizer), params_(model.parameters()) {
  std::vector<std::int64_t> sizes;
  for (const Variable& p : params_) {
    // Parameters are plain f32 (docs/design.md), so the flat order is the storage order.
    DT_CHECK(p.data().dtype() == DType::kF32 && p.data().layout() == Layout::kPlain,
             "parameter-server training needs plain f32 parameters, not {}", p.data().describe());
    sizes.push_back(p.data().numel());
    weights_.push_back(p.data().data<float>());
    zeros_.push_back(Tensor::zeros_like(p.data()));
  }
  worker_ = std::make_unique<PsWorker>(transport, config, std::move(sizes));
  const Sharding& sharding = worker_->sharding();
  shards_of_tensor_.resize(params_.size());
  tensors_in_shard_.assign(static_cast<std::size_t>(config.servers), 0);
  for (int k = 0; k < config.servers; ++k) {
    for (const TensorSlice& slice : sharding.slices(k)) {
      shards_of_tensor_[slice.tensor].push_back(k);
      ++tensors_in_shard_[static_cast<std::size_t>(k)];
    }
  }
  grads_.resize(params_.size());
  grad_ptrs_.resize(params_.size());
  for (std::size_t i = 0; i < params_.size(); ++i) {
    params_[i].add_grad_ready_hook([this, i](Variable& v) {
      if (collecting_) on_grad_ready(i, v.grad());
    });
  }
  if (resumed && transport.rank() == 0) {
    const OptimizerShards state = optimizer_shards();
    worker_->start(weights_, &state);
  } else {
    worker_->start(weights_);
  }
}

PsUpdater::~PsUpdater() {
  for (Variable& p : params_) p.clear_grad_ready_hooks();
}

void PsUpdater::on_grad_ready(std::size_t i, const Tensor& grad) {
  grads_[i] = grad.defined() ? grad.to_plain() : zeros_[i];
  grad_ptrs_[i] = grads_[i].data<float>();
  for (int k : shards_of_tensor_[i]) {
    if (--waiting_[static_cast<std::size_t>(k)] == 0) push(k);
  }
}

void PsUpdater::push(int k) {
  if (observer_ != nullptr) observer_->push_begin(static_cast<std::size_t>(k));
  worker_->push(k, grad_ptrs_, lr_);
  if (observer_ != nullptr) observer_->push_end(static_cast<std::size_t>(k));
}

OptimizerShards PsUpdater::optimizer_shards() {
  OptimizerShards out;
  out.steps = optimizer_.steps();
  out.applied_lr = optimizer_.applied_lr();
  const auto state = optimizer_.state();  // slot-major: every parameter's tensor of slot 0, then 1, ...
  DT_CHECK(state.size() % params_.size() == 0, "{} optimizer state tensors for {} parameters", state.size(),
           params_.size());
  for (std::size_t i = 0; i < state.size(); ++i) {
    if (i % params_.size() == 0) out.slots.emplace_back();
    Tensor t = state[i].second;
    DT_CHECK(t.dtype() == DType::kF32 && t.layout() == Layout::kPlain &&
                 t.numel() == params_[i % params_.size()].data().numel(),
             "optimizer state {} is not a plain f32 tensor of its parameter's size", state[i].first);
    out.slots.back().push_back(t.data<float>());
  }
  return out;
}

void PsUpdater::fetch_server_state() {
  OptimizerShards state = optimizer_shards();
  worker_->snapshot(weights_, state);
  optimizer_.set_steps(state.steps);
}

void PsUpdater::set_accumulate(int k) {
  if (k < 1) throw InputError(fmt::format("--accumulate must be >= 1, got {}", k));
  accumulate_ = k;
}

StepResult PsUpdater::update(const Batch& batch, std::int64_t iteration) {
  lr_ = optimizer_.lr();
  waiting_ = tensors_in_shard_;
  std::fill(grad_ptrs_.begin(), grad_ptrs_.end(), nullptr);
  collecting_ = accumulate_ == 1;
  StepResult r;
  try {
    r = forward_backward(batch, iteration, accumulate_);
  } catch (...) {
    collecting_ = false;
    throw;
  }
  collecting_ = false;
  const Stopwatch sw;
  // What backward did not reach (or, with --accumulate, everything): its gradient now.
  const auto scale = static_cast<float>(1.0 / accumulate_);
  for (std::size_t i = 0; i < params_.size(); ++i) {
    if (grad_ptrs_[i] != nullptr) continue;
    const Tensor& g = params_[i].grad();
    grads_[i] = g.defined() ? g.to_plain() : zeros_[i];
    if (accumulate_ > 1 && g.defined()) {
      // The micro-batches' summed mean gradients to the batch's mean, in place (the next step
      // zeroes the gradients anyway).
      float* v = grads_[i].data<float>();
      scaled_copy(v, v, static_cast<std::size_t>(grads_[i].numel()), scale);
    }
    grad_ptrs_[i] = grads_[i].data<float>();
  }
  for (int k = 0; k < worker_->sharding().shards(); ++k) {
    if (!worker_->pushed(k)) push(k);
  }
  if (observer_ != nullptr) observer_->pull_begin();
  worker_->pull_next(weights_);
  if (observer_ != nullptr) observer_->pull_end();
  for (Tensor& g : grads_) g = Tensor();
  r.times.comm = sw.seconds();
  return r;
}

}  // namespace dtrain::ps
