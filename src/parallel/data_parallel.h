// Data-parallel training (the ChainerMN / Horovod / DDP scheme): every rank holds a replica of the
// model, trains on its own shard of each global batch, and the ranks average their gradients
// with an allreduce before every update, so all replicas stay identical.
//
// One step of DataParallelUpdater:
//   1. forward and backward of each of the K micro-batches (--accumulate K) of this rank's batch;
//      gradients accumulate in the parameters;
//   2. during the last backward, each parameter's grad-ready hook copies its gradient (times
//      1/(p*K)) into its bucket, or a bucket of one parameter adopts it (parallel/buckets.h); a
//      complete bucket is handed to the communication thread at once, which optionally casts it
//      to f16/bf16 and allreduces it while backward goes on;
//   3. the update waits for the buckets (that wait is the exposed communication, "comm" in the
//      metrics log) and applies the averaged gradients; where the ranks share their weights
//      (shm, parallel/shared_weights.h) each applies its part of them.
// With double buffering (ChainerMN's DoubleBufferingOptimizer), step t's update uses the
// gradients allreduced during step t-1, so communication overlaps a whole step at the price of
// one step of staleness; the first step only communicates, and flush() applies the last one.
#pragma once

#include <memory>
#include <span>
#include <string>
#include <vector>

#include "comm/algorithm.h"
#include "parallel/buckets.h"
#include "parallel/comm_worker.h"
#include "parallel/shared_weights.h"
#include "train/trace_hooks.h"
#include "train/updater.h"

namespace dtrain {

struct DataParallelConfig {
  // kAuto: shm where every rank is on one host, else the communicator's choice per bucket size.
  comm::Algorithm algorithm = comm::Algorithm::kAuto;
  DType comm_dtype = DType::kF32;
  std::size_t bucket_bytes = std::size_t{1} << 20;
  bool double_buffering = false;
  int accumulate = 1;  // micro-batches per step
  // With shm and without double buffering: one copy of the weights and optimizer state in the
  // ranks' shared memory, each rank updating its part (parallel/shared_weights.h).
  bool shared_weights = true;
  // Synchronized batch norm (--sync-bn): every batch norm of the model normalises with the global
  // batch's statistics, summed over the ranks through the worker (autograd/ops/sync_norm.cpp).
  bool sync_batch_norm = false;
};

class DataParallelUpdater : public Updater {
 public:
  // Broadcasts rank 0's parameters and buffers to every rank. `worker` runs all communication.
  DataParallelUpdater(Module& model, Optimizer& optimizer, CommWorker& worker, DataParallelConfig config);
  ~DataParallelUpdater() override;

  StepResult update(const Batch& batch, std::int64_t iteration) override;
  void flush() override;
  const GradientBuckets& buckets() const { return *buckets_; }
  // The allreduce the buckets use: the configured one, or what kAuto resolved to at start-up
  // (shm, or kAuto again: the communicator's choice per bucket).
  comm::Algorithm algorithm() const { return config_.algorithm; }
  // Whether the ranks share one copy of the weights and split the update (shared_weights.h).
  bool shares_weights() const { return shared_weights_ != nullptr; }
  // Each bucket's allreduce and the update, for traces; null to stop. Must outlive the jobs
  // submitted while it is set.
  void set_observer(UpdateObserver* observer) { observer_ = observer; }

 private:
  void forward_backward(const Batch& batch, std::int64_t iteration, StepResult& r);
  void submit(const std::vector<std::size_t>& buckets, int set);
  // Waits for set's buckets, checks them, points the gradients at them and updates.
  void apply(int set, std::int64_t iteration, StepResult& r);

  Module& model_;
  Optimizer& optimizer_;
  CommWorker& worker_;
  DataParallelConfig config_;
  std::vector<Variable> params_;
  std::vector<std::string> names_;
  std::unique_ptr<GradientBuckets> buckets_;
  std::unique_ptr<SharedWeights> shared_weights_;
  std::span<std::byte> shared_;         // the buckets' shared memory (shm), owned by the communicator
  int set_ = 0;                         // buffer set of the step in progress
  bool collecting_ = false;             // hooks copy gradients (last micro-batch only)
  std::vector<std::uint64_t> tickets_;  // per set: last job submitted
  std::vector<bool> pending_;           // per set: holds gradients not yet applied
  std::int64_t pending_iteration_ = 0;
  UpdateObserver* observer_ = nullptr;
};

}  // namespace dtrain
