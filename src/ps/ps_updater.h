// The worker's Updater in parameter-server training: the trainer's loop is the one of every
// other mode, and only this step differs. Per step at clock c:
//   1. forward, softmax cross-entropy and backward of this worker's batch (the loss checked
//      finite before anything leaves the worker, as StandardUpdater does);
//   2. push every server its shard of the gradients with the optimizer's learning rate (the
//      trainer's schedule sets it), pull clock c + 1 and copy the weights into the parameters
//      (ps/ps_worker.h); the wait for the gate is the step's "comm" time.
// The optimizer itself runs on the servers (ps/server.h); the worker's Optimizer only carries the
// learning rate. Batch-norm statistics stay each worker's own.
#pragma once

#include <memory>
#include <vector>

#include "comm/transport.h"
#include "ps/protocol.h"
#include "ps/ps_worker.h"
#include "train/updater.h"

namespace dtrain::ps {

class PsUpdater : public StandardUpdater {
 public:
  // Worker `transport.rank()`: worker 0's parameters become the servers' initial weights, and
  // every worker starts from them. `transport` must outlive the updater.
  PsUpdater(Module& model, Optimizer& optimizer, comm::Transport& transport, const PsConfig& config);

  StepResult update(const Batch& batch, std::int64_t iteration) override;
  // Tells the servers this worker is done (also when the updater is destroyed).
  void finish() { worker_->finish(); }
  const PsWorker& worker() const { return *worker_; }

 private:
  std::vector<Variable> params_;
  std::vector<float*> weights_;
  std::vector<Tensor> zeros_;  // the gradient of a parameter backward did not reach
  std::unique_ptr<PsWorker> worker_;
};

}  // namespace dtrain::ps
