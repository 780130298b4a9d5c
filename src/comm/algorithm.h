// Allreduce algorithms: names, the automatic choice, and what each one costs.
//
// Cost notation (Thakur, Rabenseifner & Gropp 2005): a message of n bytes costs alpha + n*beta
// (latency plus per-byte transfer), and reducing n bytes costs n*gamma. p is the world size, n the
// message size in bytes. Each algorithm's header (comm/algorithms/*.h) states its phases, steps,
// bytes sent per rank and its alpha-beta-gamma cost; its *_cost function returns the exact
// counts for one rank, and tests/comm checks them against an instrumented transport. The
// performance model evaluates the same functions, so model and code agree by construction.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>

#include "tensor/dtype.h"

namespace dtrain::comm {

enum class Algorithm : std::uint8_t { kRing, kTree, kButterfly, kOneToAll, kMpi, kShm, kAuto };

// "ring", "tree", "butterfly", "onetoall", "mpi", "shm", "auto".
std::string_view algorithm_name(Algorithm a);
// Parses the names above; throws InputError listing them.
Algorithm parse_algorithm(std::string_view name);
// Every concrete algorithm (not kAuto), in a fixed order.
std::span<const Algorithm> all_algorithms();

// The one place "auto" is decided (the performance model will replace the rule). With p ranks
// and n bytes:
//   p == 1                      -> ring (nothing is sent);
//   n < 64 KiB                  -> butterfly: 2*ceil(log2 p) latency terms instead of ring's
//                                  2(p-1), which is what matters for small messages;
//   otherwise                   -> ring: the same bytes per rank as butterfly (2n(p-1)/p) but
//                                  neighbour-only traffic pipelined in chunks across its steps.
// The MPI baseline is never chosen automatically, nor is shm (it needs every rank on one host:
// the performance model's choice, perfmodel/auto_choice.h, knows where the ranks run).
Algorithm choose_algorithm(int world_size, std::size_t bytes);

// What one rank does in one collective, the quantities the alpha-beta-gamma model charges.
struct CommCost {
  std::uint64_t messages_sent = 0;
  std::uint64_t bytes_sent = 0;
  std::uint64_t messages_received = 0;
  std::uint64_t bytes_received = 0;
  std::uint64_t bytes_reduced = 0;  // received bytes this rank adds into its data (gamma term)
  // Model terms, not counted by a transport: sequential message steps on this rank's path (each
  // charged alpha), and the bytes charged beta: per step the larger of what the rank sends and
  // receives in it (a step that sends and receives at once costs alpha + max * beta).
  std::uint64_t rounds = 0;
  std::uint64_t beta_bytes = 0;

  bool operator==(const CommCost&) const = default;
};

// Point-to-point messages are at most chunk_bytes long (rounded down to whole elements, at least
// one element) so that a rank reduces or forwards one chunk while the next is in flight. Empty
// blocks are not sent at all.
constexpr std::size_t kDefaultChunkBytes = std::size_t{1} << 20;

// Chunk size (the largest point-to-point message of the pipelined collectives) by where the bytes
// go, as measured with `dtrain bench allreduce --chunk-kb` (docs/distributed.md):
//   one host    1 MiB: Open MPI's shared-memory path copies a large message once (single-copy
//               CMA), so fewer, larger messages are cheaper; 64 KiB chunks halve busbw here.
//   across hosts 32 KiB: over TCP, Open MPI sends a message up to its eager limit (64 KiB by
//               default, header included) at once and a longer one only after a rendezvous round
//               trip, which leaves the link idle between chunks; with 1 MiB chunks a 1 Gbit/s link
//               carried 0.084 GB/s, with 32 KiB 0.119 GB/s (its line rate after headers).
// A job that spans hosts uses the network chunk for all of its messages: chunks are a property of
// the collective, and the slowest link sets its pace.
constexpr std::size_t kNetworkChunkBytes = std::size_t{32} << 10;
// kDefaultChunkBytes on one host, kNetworkChunkBytes across hosts (see above).
constexpr std::size_t chunk_bytes_for(bool spans_hosts) {
  return spans_hosts ? kNetworkChunkBytes : kDefaultChunkBytes;
}

// Messages a block of `count` elements of `elem_bytes` each is split into.
std::uint64_t chunk_count(std::size_t count, std::size_t elem_bytes, std::size_t chunk_bytes);

// Exact per-rank counts of allreduce algorithm `a` (not kAuto) on `count` elements of `dtype`
// over a world of `p` ranks.
// kMpi returns an estimate (Open MPI chooses its own algorithm): see algorithms/mpi_native.h.
CommCost allreduce_cost(Algorithm a, int p, int rank, std::size_t count, DType dtype,
                        std::size_t chunk_bytes = kDefaultChunkBytes);

// The same for the other collectives of Communicator (sizes as its methods take them).
CommCost broadcast_cost(int p, int rank, std::size_t bytes, int root, std::size_t chunk_bytes = kDefaultChunkBytes);
CommCost allgather_cost(int p, int rank, std::size_t bytes_per_rank, std::size_t chunk_bytes = kDefaultChunkBytes);
CommCost reduce_scatter_cost(int p, int rank, std::size_t count_per_rank, DType dtype,
                             std::size_t chunk_bytes = kDefaultChunkBytes);
CommCost barrier_cost(int p);

// Machine constants of the alpha-beta-gamma model (seconds, seconds per byte).
struct AlphaBetaGamma {
  double alpha = 0;
  double beta = 0;
  double gamma = 0;
};
// rounds*alpha + beta_bytes*beta + bytes_reduced*gamma (reductions are not overlapped with
// transfers in this model).
double predict_seconds(const CommCost& cost, const AlphaBetaGamma& machine);
// The slowest rank's prediction for an allreduce.
double predict_allreduce_seconds(Algorithm a, int p, std::size_t count, DType dtype, const AlphaBetaGamma& machine,
                                 std::size_t chunk_bytes = kDefaultChunkBytes);

}  // namespace dtrain::comm
