#include "comm/algorithm.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>

#include "comm/algorithms/barrier.h"
#include "comm/algorithms/butterfly.h"
#include "comm/algorithms/mpi_native.h"
#include "comm/algorithms/one_to_all.h"
#include "comm/algorithms/ring.h"
#include "comm/algorithms/shared_memory.h"
#include "comm/algorithms/tree.h"
#include "core/error.h"

namespace dtrain::comm {
namespace {
constexpr std::array kConcrete = {Algorithm::kRing,     Algorithm::kTree, Algorithm::kButterfly,
                                  Algorithm::kOneToAll, Algorithm::kMpi,  Algorithm::kShm};
}  // namespace

std::string_view algorithm_name(Algorithm a) {
  switch (a) {
    case Algorithm::kRing:
      return "ring";
    case Algorithm::kTree:
      return "tree";
    case Algorithm::kButterfly:
      return "butterfly";
    case Algorithm::kOneToAll:
      return "onetoall";
    case Algorithm::kMpi:
      return "mpi";
    case Algorithm::kShm:
      return "shm";
    case Algorithm::kAuto:
      return "auto";
  }
  return "?";
}

Algorithm parse_algorithm(std::string_view name) {
  for (Algorithm a : kConcrete) {
    if (algorithm_name(a) == name) return a;
  }
  if (name == "auto") return Algorithm::kAuto;
  throw InputError(
      fmt::format("unknown allreduce algorithm '{}'; valid: ring|tree|butterfly|onetoall|mpi|shm|auto", name));
}

std::span<const Algorithm> all_algorithms() { return kConcrete; }

Algorithm choose_algorithm(int world_size, std::size_t bytes) {
  if (world_size <= 1) return Algorithm::kRing;
  return bytes < (std::size_t{64} << 10) ? Algorithm::kButterfly : Algorithm::kRing;
}

std::uint64_t chunk_count(std::size_t count, std::size_t elem_bytes, std::size_t chunk_bytes) {
  const std::size_t step = std::max<std::size_t>(1, chunk_bytes / elem_bytes);
  return (count + step - 1) / step;
}

CommCost allreduce_cost(Algorithm a, int p, int rank, std::size_t count, DType dtype, std::size_t chunk_bytes) {
  DT_CHECK(p >= 1 && rank >= 0 && rank < p, "rank {} of {}", rank, p);
  const std::size_t elem = dtype_size(dtype);
  switch (a) {
    case Algorithm::kRing:
      return detail::ring_allreduce_cost(p, rank, count, elem, chunk_bytes);
    case Algorithm::kTree:
      return detail::tree_allreduce_cost(p, rank, count, elem, chunk_bytes);
    case Algorithm::kButterfly:
      return detail::butterfly_allreduce_cost(p, rank, count, elem, chunk_bytes);
    case Algorithm::kOneToAll:
      return detail::onetoall_allreduce_cost(p, rank, count, elem, chunk_bytes);
    case Algorithm::kMpi:
      return detail::mpi_allreduce_cost_estimate(p, rank, count, elem);
    case Algorithm::kShm:
      return detail::shm_allreduce_cost(p, rank, count, elem);
    case Algorithm::kAuto:
      return allreduce_cost(choose_algorithm(p, count * elem), p, rank, count, dtype, chunk_bytes);
  }
  throw InternalError("unknown algorithm");
}

CommCost broadcast_cost(int p, int rank, std::size_t bytes, int root, std::size_t chunk_bytes) {
  return detail::broadcast_tree_cost(p, rank, bytes, 1, chunk_bytes, root);
}

CommCost allgather_cost(int p, int rank, std::size_t bytes_per_rank, std::size_t chunk_bytes) {
  return detail::ring_allgather_cost(p, rank, bytes_per_rank * static_cast<std::size_t>(p), 1, chunk_bytes);
}

CommCost reduce_scatter_cost(int p, int rank, std::size_t count_per_rank, DType dtype, std::size_t chunk_bytes) {
  return detail::ring_reduce_scatter_cost(p, rank, count_per_rank * static_cast<std::size_t>(p), dtype_size(dtype),
                                          chunk_bytes);
}

CommCost barrier_cost(int p) { return detail::dissemination_barrier_cost(p); }

double predict_seconds(const CommCost& cost, const AlphaBetaGamma& m) {
  return static_cast<double>(cost.rounds) * m.alpha + static_cast<double>(cost.beta_bytes) * m.beta +
         static_cast<double>(cost.bytes_reduced) * m.gamma;
}

double predict_allreduce_seconds(Algorithm a, int p, std::size_t count, DType dtype, const AlphaBetaGamma& machine,
                                 std::size_t chunk_bytes) {
  double worst = 0;
  for (int r = 0; r < p; ++r)
    worst = std::max(worst, predict_seconds(allreduce_cost(a, p, r, count, dtype, chunk_bytes), machine));
  return worst;
}

}  // namespace dtrain::comm
