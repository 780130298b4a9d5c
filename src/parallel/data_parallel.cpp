#include "parallel/data_parallel.h"

#include <cmath>

#include "autograd/ops/loss.h"
#include "core/timer.h"
#include "nn/batch_norm.h"
#include "tensor/backend.h"

namespace dtrain {

DataParallelUpdater::DataParallelUpdater(Module& model, Optimizer& optimizer, CommWorker& worker,
                                         DataParallelConfig config)
    : model_(model), optimizer_(optimizer), worker_(worker), config_(config) {
  if (config_.accumulate < 1) throw InputError(fmt::format("--accumulate must be >= 1, got {}", config_.accumulate));
  for (auto& [name, p] : model_.named_parameters()) {
    params_.push_back(p);
    names_.push_back(name);
  }
  // Every replica starts from rank 0's parameters and batch-norm statistics.
  std::vector<Tensor> state;
  for (const Variable& p : params_) state.push_back(p.data());
  for (auto& [name, b] : model_.named_buffers()) state.push_back(b);
  worker_.run([&state](comm::Communicator& c) {
    for (Tensor& t : state) c.broadcast(t.raw_data(), t.nbytes(), 0);
  });

  const int sets = config_.double_buffering ? 2 : 1;
  const double grad_scale = 1.0 / (static_cast<double>(worker_.communicator().size()) * config_.accumulate);
  // auto without a performance model's choice: shm where every rank is on one host (on the
  // development VM 4-10x faster than the ring from 64 KiB to 64 MiB on 2 ranks, docs/results-distributed.md), else the
  // communicator's rule by bucket size.
  if (config_.algorithm == comm::Algorithm::kAuto && worker_.communicator().size() > 1) {
    worker_.run([this](comm::Communicator& c) {
      if (c.shares_memory()) config_.algorithm = comm::Algorithm::kShm;
    });
  }
  // shm reduces buffers in the ranks' shared memory in place: the buckets carve theirs out of one
  // region, allocated by every rank together.
  BucketMemory shared;
  if (config_.algorithm == comm::Algorithm::kShm) {
    shared = [this](std::size_t bytes) {
      worker_.run([&](comm::Communicator& c) {
        if (!c.shares_memory()) {
          throw InputError(fmt::format(
              "--allreduce shm needs every rank on one host, sharing memory; these {} ranks run on more than one "
              "(or the transport '{}' cannot map memory between them): pick ring, tree, butterfly, onetoall, mpi or "
              "auto",
              c.size(), c.transport().name()));
        }
        shared_ = c.allocate_shared(bytes);
      });
      return shared_;
    };
  }
  buckets_ = std::make_unique<GradientBuckets>(params_, names_, config_.bucket_bytes, config_.comm_dtype, sets,
                                               grad_scale, shared);
  if (config_.shared_weights && config_.algorithm == comm::Algorithm::kShm && !config_.double_buffering &&
      SharedWeights::supported(params_)) {
    shared_weights_ = std::make_unique<SharedWeights>(params_, optimizer_, worker_, buckets_->layout());
    buckets_->set_own_block_only();  // each rank reads the sums of the blocks it updates only
  }
  if (config_.sync_batch_norm) {
    // In submission order behind the buckets already queued: every rank queues the same sums in
    // the same order, forward and backward alike.
    for (BatchNorm* bn : batch_norms(model_)) bn->set_sync(exact_sum_through(worker_));
  }
  tickets_.assign(static_cast<std::size_t>(sets), 0);
  pending_.assign(static_cast<std::size_t>(sets), false);
  for (std::size_t i = 0; i < params_.size(); ++i) {
    params_[i].add_grad_ready_hook([this, i](Variable& v) {
      if (collecting_) submit(buckets_->add(i, v.grad(), set_), set_);
    });
  }
}

DataParallelUpdater::~DataParallelUpdater() {
  for (Variable& p : params_) p.clear_grad_ready_hooks();
  if (config_.sync_batch_norm) {
    for (BatchNorm* bn : batch_norms(model_)) bn->set_sync({});  // the model may outlive the worker
  }
  // Gradients may be views of bucket memory the communicator owns (shm): none outlives it.
  if (!shared_.empty()) {
    for (Variable& p : params_) p.zero_grad();
  }
}

void DataParallelUpdater::submit(const std::vector<std::size_t>& buckets, int set) {
  for (std::size_t b : buckets) {
    UpdateObserver* o = observer_;
    tickets_[static_cast<std::size_t>(set)] = worker_.submit([this, b, set, o](comm::Communicator& c) {
      if (o != nullptr) o->bucket_begin(b, buckets_->layout().bucket_elements[b]);
      buckets_->reduce(c, b, set, config_.algorithm);
      if (o != nullptr) o->bucket_end(b);
    });
  }
}

void DataParallelUpdater::forward_backward(const Batch& batch, std::int64_t iteration, StepResult& r) {
  const std::int64_t n = batch.x.size(0);
  const int k = config_.accumulate;
  if (n % k != 0) {
    throw InputError(fmt::format("--accumulate {} must divide the per-rank batch {} evenly", k, n));
  }
  optimizer_.zero_grad();
  // One backward pass whose gradients are final as they leave it: ops may write them straight into
  // a 16-bit wire, scaled (buckets.h).
  buckets_->begin(set_, k == 1);
  double loss_sum = 0;
  for (int m = 0; m < k; ++m) {
    const std::int64_t lo = n / k * m, hi = n / k * (m + 1);
    const Tensor x = k == 1 ? batch.x : batch.x.slice_rows(lo, hi);
    const Tensor y = k == 1 ? batch.y : batch.y.slice_rows(lo, hi);
    Stopwatch sw;
    Variable logits = model_(Variable(x));
    Variable loss = ops::softmax_cross_entropy(logits, y, label_smoothing());
    const double value = loss.data().item();
    if (!std::isfinite(value)) {
      throw NumericError(fmt::format(
          "the loss became {} at step {} on rank {} (0-based global iteration); training stopped before the update. "
          "Lower --lr, add --warmup-epochs, or check the input data",
          value, iteration, worker_.communicator().rank()));
    }
    loss_sum += value;
    r.correct += ops::count_correct(logits.data(), y);
    r.times.forward += sw.seconds();
    sw.reset();
    collecting_ = m == k - 1;
    loss.backward();
    collecting_ = false;
    r.times.backward += sw.seconds();
  }
  r.loss = loss_sum / k;
  r.samples = n;
  submit(buckets_->complete(set_), set_);  // parameters that got no gradient this step
  pending_[static_cast<std::size_t>(set_)] = true;
}

void DataParallelUpdater::apply(int set, std::int64_t iteration, StepResult& r) {
  Stopwatch sw;
  if (shared_weights_) {
    // No rank reads the weights again this step once every rank is here (shared_weights.h).
    tickets_[static_cast<std::size_t>(set)] = worker_.submit([](comm::Communicator& c) { c.barrier(); });
  }
  worker_.wait(tickets_[static_cast<std::size_t>(set)]);
  r.times.comm += sw.seconds();
  pending_[static_cast<std::size_t>(set)] = false;
  const std::string bad = buckets_->non_finite_parameter(set);
  if (!bad.empty()) {
    throw NumericError(
        fmt::format("NaN or Inf in the allreduced gradient of {} at step {}; training stopped "
                    "before the update. Lower --lr or add --warmup-epochs",
                    bad, iteration));
  }
  sw.reset();
  if (observer_ != nullptr) observer_->update_begin();
  for (std::size_t i = 0; i < params_.size(); ++i) params_[i].set_grad(buckets_->gradient(i, set));
  if (shared_weights_) {
    shared_weights_->update();
  } else {
    optimizer_.step();
  }
  if (observer_ != nullptr) observer_->update_end();
  r.times.update += sw.seconds();
}

StepResult DataParallelUpdater::update(const Batch& batch, std::int64_t iteration) {
  StepResult r;
  forward_backward(batch, iteration, r);
  if (!config_.double_buffering) {
    apply(set_, iteration, r);
    return r;
  }
  const int previous = 1 - set_;
  if (pending_[static_cast<std::size_t>(previous)]) apply(previous, pending_iteration_, r);
  pending_iteration_ = iteration;
  set_ = previous;
  return r;
}

void DataParallelUpdater::flush() {
  if (!config_.double_buffering) return;
  const int last = 1 - set_;
  if (pending_[static_cast<std::size_t>(last)]) {
    StepResult r;
    apply(last, pending_iteration_, r);
  }
}

}  // namespace dtrain
