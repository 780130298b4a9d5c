// Shared-memory allreduce ("shm"): ranks of one host read and write each other's buffers directly
// (comm/shared_memory.h) instead of sending messages, as CPU collectives for one node do (oneCCL's
// and DeepSpeed's shared-memory allreduce). The vector is cut into p blocks (collective.h:
// block_of); after every rank has arrived, rank r adds block r of every other rank's buffer into
// its own block r, in rank order, and copies the sum into block r of every other rank's buffer, a
// chunk at a time so the sum is still in cache when it is copied; then every rank waits until
// all have finished before its buffer may change again.
//
// Zero copy when the buffer lies in memory from Communicator::allocate_shared: the peers read it
// where it is. Any other buffer is first copied into a shared staging buffer and the result copied
// back (2n more bytes moved by that rank, plus one more barrier).
//
// With a scale (Communicator::allreduce_scaled) each rank also multiplies its block's sums and
// tests them for NaN and Inf as they are made, in cache: no pass of its own over the vector.
// Where each rank needs only its own block (Communicator::reduce_scatter_scaled: ranks sharing
// their weights, parallel/shared_weights.h) no sum is copied to the other ranks, which saves the
// (p-1)/p * n bytes of writes below.
//
// Steps (p ranks, n bytes): 2 barriers, each a flag written by every rank and read by all (a
// cache-line transfer between cores, not a message); no messages.
// Bytes per rank: reads (p-1)/p * n from the peers' buffers, writes (p-1)/p * n into them, and
// reduces (p-1)/p * n. Against the ring (2(p-1)/p * n sent and as much received, each a copy
// through the transport), the reads of the scatter-reduce and the copies of the all-gather go
// straight to where the data is needed.
// Cost: 2 alpha_flag + 2((p-1)/p) n beta_mem + ((p-1)/p) n gamma, where alpha_flag is a cache-line
// round trip and beta_mem a memory copy's time per byte; the performance model uses the times
// dtrain calibrate measures for this algorithm (perfmodel/allreduce_time.h).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "comm/algorithm.h"
#include "comm/algorithms/collective.h"
#include "comm/shared_memory.h"

namespace dtrain::comm::detail {

// A communicator's shared memory: the control flags, the regions handed out by allocate(), the
// staging buffer. Every call is collective.
class SharedMemory {
 public:
  SharedMemory() = default;
  ~SharedMemory();
  SharedMemory(const SharedMemory&) = delete;
  SharedMemory& operator=(const SharedMemory&) = delete;

  // Whether the ranks can share memory (found out by the first call).
  bool available(Transport& t, const Deadline& deadline);
  // `bytes` in a new region; empty where !available().
  std::span<std::byte> allocate(Transport& t, std::size_t bytes, const Deadline& deadline);
  // `bytes` in a new region of rank `owner`'s alone, as this rank addresses it: one copy that
  // every rank reads and writes. Empty where !available().
  std::span<std::byte> allocate_common(Transport& t, int owner, std::size_t bytes, const Deadline& deadline);
  // Sums `count` elements over the ranks, in place. Needs available(). With `scale` (f32 only),
  // each rank multiplies the sums it computes by *scale and tests them for NaN and Inf while they
  // are still in cache, before copying them out, and the ranks' verdicts travel with the last
  // barrier: returns whether every element of the result is finite, the same on every rank (true
  // without `scale`). This saves the pass over the whole vector that scaling after the sum costs
  // (a mean's 1/p, parallel/buckets.h).
  // With `own_block_only`, no rank copies its block's sums to the others: afterwards each rank's
  // buffer holds the sum in its own block only (Communicator::reduce_scatter_scaled).
  bool allreduce(Collective& c, void* data, std::size_t count, DType dtype, const float* scale = nullptr,
                 bool own_block_only = false);
  // After an error: never free the regions (their release may need every rank).
  void abandon();

 private:
  void barrier(Collective& c);

  bool probed_ = false;
  std::unique_ptr<SharedRegion> control_;
  std::vector<std::unique_ptr<SharedRegion>> regions_;
  std::unique_ptr<SharedRegion> staging_;
  std::uint64_t phase_ = 0;
  std::vector<std::byte*> buffers_;  // per rank, the current call's buffer
};

CommCost shm_allreduce_cost(int p, int rank, std::size_t count, std::size_t elem);

}  // namespace dtrain::comm::detail
