#include "comm/algorithms/mpi_native.h"

#include <bit>
#include <limits>

#include "comm/algorithms/ring.h"

namespace dtrain::comm::detail {

void mpi_allreduce(Collective& c, void* data, std::size_t count, DType dtype) {
  c.transport.native_allreduce(data, count, dtype);
}

CommCost mpi_allreduce_cost_estimate(int p, int rank, std::size_t count, std::size_t elem) {
  CommCost cost;
  if (p == 1 || count == 0) return cost;
  const std::uint64_t bytes = count * elem;
  if (bytes < (std::size_t{10} << 10)) {
    const auto steps = static_cast<std::uint64_t>(std::bit_width(static_cast<unsigned>(p - 1)));
    return {steps, steps * bytes, steps, steps * bytes, steps * bytes, steps, steps * bytes};
  }
  return ring_allreduce_cost(p, rank, count, elem, std::numeric_limits<std::size_t>::max());
}

}  // namespace dtrain::comm::detail
