// Collectives over a Transport: allreduce with a choice of algorithm, broadcast, allgather,
// reduce-scatter and barrier. This is what the data-parallel trainer talks to.
//
// Every rank must call the same collectives in the same order with the same sizes, dtype and
// algorithm (check_agreement in comm/agreement.h verifies the configuration at start-up; a
// mismatch at run time shows up as a size-mismatch or timeout CommError rather than a hang, since
// each collective kind and algorithm uses its own message tag). Sums are accumulated and rounded
// as comm/reduce.h states: f32 in f32; f16 and bf16 added in f32 and rounded once per addition.
// All algorithms leave bitwise identical results on every rank.
//
// Each call is bounded by the collective timeout: if a peer does not answer within it, the call
// throws CommError naming that peer (after which the communicator must not be used again).
// Buffers are in place. Scratch memory and request lists are kept across calls, so repeated
// collectives of the same size allocate nothing. One thread at a time may use a Communicator.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string_view>
#include <vector>

#include "comm/algorithm.h"
#include "comm/algorithms/collective.h"
#include "comm/algorithms/shared_memory.h"
#include "comm/transport.h"
#include "tensor/dtype.h"

namespace dtrain {
class Tensor;
}

namespace dtrain::comm {

struct CommOptions {
  // Seconds a whole collective may take before it fails with CommError naming the silent peers;
  // 0 waits forever.
  double timeout_seconds = 300;
  // Largest point-to-point message; longer blocks are pipelined in chunks (comm/algorithm.h).
  std::size_t chunk_bytes = kDefaultChunkBytes;
};

struct CommStats {
  std::uint64_t collectives = 0;    // completed calls
  std::uint64_t bytes_reduced = 0;  // bytes of received data added into local buffers
};

class Communicator {
 public:
  // Uses `transport`, which must outlive the communicator.
  explicit Communicator(Transport& transport, const CommOptions& options = {});
  // Owns `transport`.
  explicit Communicator(std::unique_ptr<Transport> transport, const CommOptions& options = {});
  ~Communicator();
  Communicator(const Communicator&) = delete;
  Communicator& operator=(const Communicator&) = delete;

  int rank() const { return transport_->rank(); }
  int size() const { return transport_->size(); }
  Transport& transport() { return *transport_; }
  const CommOptions& options() const { return options_; }
  void set_timeout(double seconds) { options_.timeout_seconds = seconds; }
  // Every rank must use the same chunk size (the messages of a collective are cut by it);
  // comm/hosts.h: chunk_bytes_for chooses one by where the ranks run.
  void set_chunk_bytes(std::size_t bytes) { options_.chunk_bytes = bytes; }
  const CommStats& stats() const { return stats_; }

  // Sums `count` elements of `dtype` (f32, f16, bf16) over all ranks, in place. kAuto picks by
  // size (choose_algorithm); kMpi needs the MPI transport and kShm every rank on one host
  // (InputError otherwise, on every rank).
  void allreduce(void* data, std::size_t count, DType dtype, Algorithm algorithm = Algorithm::kAuto);
  // The same on a contiguous CPU tensor.
  void allreduce(const Tensor& tensor, Algorithm algorithm = Algorithm::kAuto);
  // Sums `count` f32 over all ranks, multiplies the sum by `scale` and returns whether every
  // element of the result is finite (the same on every rank): a data-parallel step's mean
  // gradient and its NaN check. kShm does both inside the reduction, on each block while it is in
  // cache; the other algorithms make one pass after the sum (comm/reduce.h: scale_all_finite).
  bool allreduce_scaled(float* data, std::size_t count, float scale, Algorithm algorithm = Algorithm::kAuto);
  // As allreduce_scaled where a rank needs only its own block of the result (algorithms/
  // collective.h: block_of(count, size(), rank())), as ranks that share their weights do
  // (parallel/shared_weights.h): kShm then leaves the other blocks as they were, saving the copy
  // of every sum to the other ranks ((p-1)/p of the bytes it writes); the other algorithms make
  // the whole result. The verdict covers every block, the same on every rank.
  bool reduce_scatter_scaled(float* data, std::size_t count, float scale, Algorithm algorithm = Algorithm::kAuto);
  // Copies `bytes` bytes from rank `root` to every rank (binomial tree, pipelined in chunks).
  void broadcast(void* data, std::size_t bytes, int root);
  // In place: data holds size() blocks of bytes_per_rank; this rank's block (at rank() *
  // bytes_per_rank) is its contribution; afterwards every block holds its rank's (ring).
  void allgather(void* data, std::size_t bytes_per_rank);
  // Out of place: `mine` (bytes_per_rank) is copied to all + rank() * bytes_per_rank first.
  void allgather(const void* mine, void* all, std::size_t bytes_per_rank);
  // In place: data holds size() blocks of count_per_rank elements; afterwards block rank() holds
  // the sum of everybody's block rank(); the other blocks hold partial sums (ring).
  void reduce_scatter(void* data, std::size_t count_per_rank, DType dtype);
  // Returns once every rank has entered (dissemination barrier).
  void barrier();

  // Collective. Whether the ranks can share memory (every rank on one host, a backend that maps
  // it), so that allreduce(kShm) runs.
  bool shares_memory();
  // Collective: `bytes` of zeroed memory that every rank of the host maps, this rank's part of a
  // new region (kept until the communicator dies); empty where !shares_memory(). allreduce(kShm)
  // on a buffer inside it reads and writes it in place, with no copy (algorithms/shared_memory.h).
  std::span<std::byte> allocate_shared(std::size_t bytes);
  // Collective: `bytes` of zeroed memory in one region that every rank of the host reads and
  // writes, rank 0's (each rank gets its own address of it); empty where !shares_memory(). For
  // one copy of data the ranks share, as the weights (parallel/shared_weights.h).
  std::span<std::byte> allocate_shared_common(std::size_t bytes);

 private:
  template <typename Body>
  void run(int kind, Algorithm algorithm, Body&& body);
  bool allreduce_then_scale(void* data, std::size_t count, DType dtype, Algorithm algorithm, const float* scale,
                            bool own_block_only = false);

  std::unique_ptr<Transport> owned_;
  Transport* transport_;
  CommOptions options_;
  CommStats stats_;
  detail::Scratch scratch_;
  std::array<std::vector<Request>, detail::kRequestLists> lists_;
  std::array<char, 160> what_{};
  std::unique_ptr<detail::SharedMemory> shared_;
};

}  // namespace dtrain::comm
