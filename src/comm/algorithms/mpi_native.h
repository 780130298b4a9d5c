// The "mpi" algorithm: MPI_Allreduce itself, the baseline every dtrain algorithm is measured
// against. f32 uses MPI_FLOAT/MPI_SUM; f16 and bf16 use a user-defined commutative MPI_Op that
// adds as comm/reduce.h does (in f32, rounded once per addition). Only the MPI transport offers
// it (Transport::native_allreduce), and as one opaque library call it is not bounded by the
// collective timeout (MPI's own error handling and mpirun deal with dead ranks there).
//
// Cost: Open MPI picks its algorithm at run time (coll/tuned decision rules by p and n), so the
// cost below is an estimate, not an exact count, and is not checked against the instrumented
// transport: recursive doubling for n < 10 KiB (ceil(log2 p) (alpha + n beta + n gamma)), and a
// ring (as ring.h, without chunking) above.
#pragma once

#include <cstddef>

#include "comm/algorithm.h"
#include "comm/algorithms/collective.h"

namespace dtrain::comm::detail {

void mpi_allreduce(Collective& c, void* data, std::size_t count, DType dtype);
CommCost mpi_allreduce_cost_estimate(int p, int rank, std::size_t count, std::size_t elem);

}  // namespace dtrain::comm::detail
