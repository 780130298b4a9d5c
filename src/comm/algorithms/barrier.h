// Dissemination barrier (Hensgen, Finkel & Manber): in round k (distance 2^k < p) rank r sends an
// empty message to (r + 2^k) mod p and waits for one from (r - 2^k) mod p. After ceil(log2 p)
// rounds every rank has heard, directly or through others, from every rank, so none leaves
// before all have arrived. Cost: ceil(log2 p) alpha; no bytes.
#pragma once

#include "comm/algorithm.h"
#include "comm/algorithms/collective.h"

namespace dtrain::comm::detail {

void dissemination_barrier(Collective& c);
CommCost dissemination_barrier_cost(int p);

}  // namespace dtrain::comm::detail
