// Batches for one epoch of a sampler, prepared ahead of time on a background thread.
//
// Preparing a batch (gather samples, convert uint8 to f32, augment, normalise, and an optional
// caller hook such as a layout reorder) runs on one worker thread that keeps up to `prefetch`
// finished batches in a bounded queue, so that work overlaps the training step that consumes the
// previous batch. Every random choice is keyed by (seed, epoch, sample index), so the batches are
// bit-identical to preparing them one by one on the caller's thread (prefetch = 0, the
// synchronous mode for tests and benchmarks). An exception on the worker reaches the consumer
// from next() once the batches prepared before it have been delivered. Destroying a Loader
// mid-epoch stops the worker after its current batch and joins it.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <exception>
#include <functional>
#include <mutex>
#include <optional>
#include <span>
#include <thread>
#include <vector>

#include "data/augment.h"
#include "data/dataset.h"
#include "data/pixels.h"
#include "data/sampler.h"
#include "tensor/tensor.h"

namespace dtrain {

struct Batch {
  Tensor x;                           // f32 [B, C, H, W], plain layout (unless on_prepared changes it)
  Tensor y;                           // i32 [B]
  std::vector<std::int64_t> indices;  // dataset index of each row
};

struct LoaderOptions {
  int prefetch = 2;             // batches prepared ahead; 0: synchronous, on the caller's thread
  AugmentConfig augment;        // usually only for training
  Normalization normalization;  // applied after augmentation
  std::uint64_t seed = 0;       // augmentation seed
  // Runs on the worker thread after a batch is prepared (e.g. reorder x to the compute layout),
  // so that this work overlaps training too. An exception it throws reaches the consumer.
  std::function<void(Batch&)> on_prepared;
};

// Prepares the batch of the given dataset indices for `epoch` (what the worker does per batch,
// without on_prepared). Throws InputError for an index outside the dataset.
Batch prepare_batch(const Dataset& ds, std::span<const std::int64_t> indices, std::int64_t epoch,
                    const LoaderOptions& options);

class Loader {
 public:
  // One epoch of `sampler` over `ds`. The dataset must outlive the loader; the sampler need not.
  Loader(const Dataset& ds, const Sampler& sampler, std::int64_t epoch, LoaderOptions options = {});
  // Explicit batches of dataset indices, for callers with their own order.
  Loader(const Dataset& ds, std::vector<std::vector<std::int64_t>> batches, std::int64_t epoch,
         LoaderOptions options = {});
  ~Loader();
  Loader(const Loader&) = delete;
  Loader& operator=(const Loader&) = delete;

  // The next batch, or nothing at the end of the epoch. Rethrows a worker's exception (again on
  // every later call). Call from one consumer thread.
  std::optional<Batch> next();

  std::int64_t num_batches() const { return static_cast<std::int64_t>(batches_.size()); }
  std::int64_t batches_delivered() const { return delivered_; }
  // Seconds the consumer spent inside next(): waiting for the worker, or preparing the batch
  // itself in synchronous mode. This is the "data" phase of the metrics log.
  double wait_seconds() const { return wait_seconds_; }
  double last_wait_seconds() const { return last_wait_seconds_; }

 private:
  void start();
  void worker();
  Batch prepare(std::size_t i) const;

  const Dataset& ds_;
  std::vector<std::vector<std::int64_t>> batches_;
  std::int64_t epoch_;
  LoaderOptions options_;

  // Consumer-side state.
  std::size_t next_sync_ = 0;  // synchronous mode: next batch to prepare
  std::int64_t delivered_ = 0;
  double wait_seconds_ = 0;
  double last_wait_seconds_ = 0;

  // Shared with the worker, guarded by mutex_.
  std::mutex mutex_;
  std::condition_variable ready_;  // a batch was queued, or the worker finished
  std::condition_variable space_;  // a batch was taken, or stop was requested
  std::deque<Batch> queue_;
  bool finished_ = false;
  bool stop_ = false;
  std::exception_ptr error_;
  std::thread thread_;
};

}  // namespace dtrain
