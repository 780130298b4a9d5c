// The worker's Updater in parameter-server training: the trainer's loop is the one of every
// other mode, and only this step differs. Per step at clock c:
//   1. forward, softmax cross-entropy and backward of this worker's batch (the loss checked
//      finite before anything leaves the worker, as StandardUpdater does), in --accumulate
//      micro-batches whose mean gradient is pushed;
//   2. push every server its shard of the gradients with the optimizer's learning rate (the
//      trainer's schedule sets it), pull clock c + 1 and copy the weights into the parameters
//      (ps/ps_worker.h); the wait for the gate is the step's "comm" time. A shard is pushed
//      during backward, the moment the last of its gradients is final (grad-ready hooks, as
//      allreduce's buckets start): backward finishes the last layers first, so with K servers
//      the shards of the later layers travel while the earlier layers' backward runs. With
//      --accumulate every shard waits for the last micro-batch's backward (the mean needs all).
// The optimizer itself runs on the servers (ps/server.h); the worker's Optimizer carries the
// learning rate, and on worker 0 the servers' state when a checkpoint is taken or resumed.
// Batch-norm statistics stay each worker's own.
#pragma once

#include <memory>
#include <vector>

#include "comm/transport.h"
#include "ps/protocol.h"
#include "ps/ps_worker.h"
#include "train/trace_hooks.h"
#include "train/updater.h"

namespace dtrain::ps {

class PsUpdater : public StandardUpdater {
 public:
  // Worker `transport.rank()`: worker 0's parameters become the servers' initial weights, and
  // every worker starts from them; with `resumed` (worker 0 restored a checkpoint into the model
  // and `optimizer`), the servers' optimizers continue from `optimizer`'s state and step count.
  // `transport` must outlive the updater.
  PsUpdater(Module& model, Optimizer& optimizer, comm::Transport& transport, const PsConfig& config,
            bool resumed = false);
  // Each step in `k` micro-batches (--accumulate): their mean gradient is pushed once.
  void set_accumulate(int k);

  ~PsUpdater() override;
  PsUpdater(const PsUpdater&) = delete;
  PsUpdater& operator=(const PsUpdater&) = delete;

  StepResult update(const Batch& batch, std::int64_t iteration) override;
  // The end of an epoch: worker 0 evaluates and may checkpoint, longer than --timeout for a large
  // test set, so every worker tells the servers it pauses until its next push (PsWorker::pause).
  void flush() override { worker_->pause(); }
  // Tells the servers this worker is done (also when the updater is destroyed).
  void finish() { worker_->finish(); }
  // Worker 0, between steps: the servers' weights into the model and their optimizer state and
  // step count into `optimizer`, so that a checkpoint holds them (train/checkpointer.h's
  // before_save).
  void fetch_server_state();
  // On resume: worker 0's step to continue from, shared with every worker (PsWorker).
  std::int64_t share_start_step(std::int64_t start) { return worker_->share_start_step(start); }
  // BSP preemption: the stop signal every worker agrees on (PsWorker::agree_stop).
  int agree_stop(int mine) { return worker_->agree_stop(mine); }
  const PsWorker& worker() const { return *worker_; }
  // A trace's view of each push and pull (train/trace_hooks.h); null: none.
  void set_observer(UpdateObserver* observer) { observer_ = observer; }

 private:
  std::vector<Variable> params_;
  std::vector<float*> weights_;
  std::vector<Tensor> zeros_;  // the gradient of a parameter backward did not reach
  int accumulate_ = 1;
  // This step's final gradients (held while their pointers are pushed) and, per shard, how many
  // of its tensors backward has not finished yet.
  std::vector<Tensor> grads_;
  std::vector<const float*> grad_ptrs_;
  std::vector<std::vector<int>> shards_of_tensor_;
  std::vector<int> waiting_, tensors_in_shard_;
  bool collecting_ = false;
  double lr_ = 0;
  UpdateObserver* observer_ = nullptr;
  void on_grad_ready(std::size_t i, const Tensor& grad);
  void push(int k);
  OptimizerShards optimizer_shards();  // pointers into optimizer_'s state (allocated if need be)
  std::unique_ptr<PsWorker> worker_;
};

}  // namespace dtrain::ps
