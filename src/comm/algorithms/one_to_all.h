// One-to-all allreduce, the parameter-server pattern: every rank sends its vector to rank 0, rank
// 0 adds them up and sends the sum back to every rank.
//
// Phases (p ranks, n bytes), pipelined in chunks: for each chunk rank 0 receives that chunk from
// ranks 1 .. p-1 (into scratch slots, the next chunk's receives already posted), adds them in rank
// order, and sends the summed chunk to ranks 1 .. p-1 before moving on. A worker sends its chunks
// in order, posting the receive of each chunk's sum into the same place once its send has
// completed, and sends chunk k once sum k - w is back: w chunks are on their way, at least 2 and
// kLinkWindowBytes (collective.h), so a link's queue never holds a whole vector each way (over
// 100 Mbit/s, a 8 MiB f16 allreduce between 2 hosts took 893 ms with every chunk posted at once,
// 703 ms with the window: 671 ms at the link's rate).
// Bytes: a worker sends n and receives n; rank 0 receives (p-1) n, reduces (p-1) n and sends
// (p-1) n. Messages: ceil(n / chunk) per worker and direction; p-1 times that at rank 0.
// Cost (rank 0 handles every message; c = the chunk, n when the vector is one chunk):
//   2(p-1) alpha + (p-1)(n + c) beta + (p-1) n gamma,
// rank 0's receives of chunk k+1 overlapping its sends of chunk k and a worker's receives its
// sends, so both directions of a full-duplex link are busy (2(p-1) n beta without the pipeline);
// beta is the rate of a link busy both ways, as for the ring. Rank 0's link carries p-1 times the
// ring's traffic, which is why parameter servers shard the vector over several servers; it is
// here as the baseline of that pattern.
#pragma once

#include <cstddef>

#include "comm/algorithm.h"
#include "comm/algorithms/collective.h"

namespace dtrain::comm::detail {

void onetoall_allreduce(Collective& c, void* data, std::size_t count, DType dtype);
CommCost onetoall_allreduce_cost(int p, int rank, std::size_t count, std::size_t elem, std::size_t chunk_bytes);

}  // namespace dtrain::comm::detail
