// Allreduce benchmark (the library half of `dtrain bench`): for each message size and each
// algorithm, including the MPI_Allreduce baseline when the transport has it, measures the time
// per call and reports it the way nccl-tests does:
//   algbw = bytes / time, busbw = algbw * 2(p-1)/p,
// where busbw is the per-link bandwidth a bandwidth-optimal allreduce needs (each rank sends and
// receives 2(p-1)/p of the message), so it is comparable across world sizes and with the
// hardware's link speed. Buffers are allocated once, at the largest size, and reused; each
// measurement is warm-up calls, a barrier, then timed calls; the time reported is the slowest
// rank's mean over the timed calls, and with repeats > 1 the median of that over repeated rounds.
// Sizes and algorithms are interleaved (for each size, round after round of every algorithm) so
// that noise on a shared machine hits all algorithms alike.
#pragma once

#include <cstddef>
#include <cstdio>
#include <span>
#include <vector>

#include "comm/communicator.h"

namespace dtrain::comm {

struct BenchOptions {
  std::size_t min_bytes = std::size_t{1} << 10;
  std::size_t max_bytes = std::size_t{64} << 20;
  std::size_t factor = 4;             // sizes min, min*factor, ... <= max
  std::vector<Algorithm> algorithms;  // empty: every algorithm this transport can run
  DType dtype = DType::kF32;
  int warmup = 3;
  int iterations = 0;       // 0: 200 below 1 MiB, 20 below 16 MiB, 5 above
  int repeats = 1;          // rounds per size; the median round is reported
  std::FILE* out = stdout;  // rank 0 prints the table as it goes; nullptr: silent
  // The buffer shm runs on, at least max_bytes (from Communicator::allocate_shared, so that it
  // runs in place); empty: a new shared region per call. The other algorithms run on private
  // huge pages (message_buffer.h), as a trainer's buckets are.
  std::span<std::byte> buffer;
};

struct BenchRow {
  Algorithm algorithm = Algorithm::kRing;
  std::size_t bytes = 0;
  std::size_t count = 0;  // elements
  int iterations = 0;
  double seconds = 0;     // per call, slowest rank (median over repeats)
  double algbw_gbps = 0;  // 1e9 bytes per second
  double busbw_gbps = 0;
};

// Runs the benchmark (a collective: every rank calls it with the same options) and returns the
// table, the same on every rank.
std::vector<BenchRow> benchmark_allreduce(Communicator& comm, const BenchOptions& options = {});

}  // namespace dtrain::comm
