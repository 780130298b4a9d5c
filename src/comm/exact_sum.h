// Sums a few doubles over the ranks exactly alike on every rank: each rank's values are
// gathered and added in rank order, in double. For statistics (batch norm's moments) where the
// collectives' f32 sums would round and the count is small; cost: an allgather of count * 8 bytes
// per rank.
#pragma once

#include <vector>

#include "comm/communicator.h"

namespace dtrain::comm {

void sum_in_rank_order(Communicator& c, std::vector<double>& values);

}  // namespace dtrain::comm
