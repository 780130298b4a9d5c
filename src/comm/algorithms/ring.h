// Ring allreduce (the bandwidth-optimal ring popularised for deep learning by Baidu): ranks form
// a ring r -> r+1, the vector is cut into p blocks (comm/algorithms/collective.h: block_of), and
// every step each rank sends one block to its successor while receiving one from its predecessor.
//
// Phases and steps (p ranks, n bytes):
//   1. scatter-reduce, p-1 steps: in step s rank r sends block (r-1-s) mod p and receives block
//      (r-2-s) mod p, which it adds into its own copy. After step p-2 rank r holds the full sum of
//      block r.
//   2. all-gather, p-1 steps: in step s rank r sends block (r-s) mod p (first its own finished
//      block, then the one it just received) and receives block (r-1-s) mod p.
// Pipelining: blocks travel as chunks of at most chunk_bytes, and a chunk is forwarded as soon as
// it is reduced (or, in the all-gather, received), so one step's transfer overlaps the next
// step's and the scatter-reduce flows straight into the all-gather: during the last scatter-reduce
// step each finished chunk is sent at once, and the receive for the predecessor's matching chunk
// is posted (the all-gather has its own tag for this), so it is pulled while still in cache.
// Incoming chunks to reduce pass through a window of two chunk-sized scratch slots
// (collective.h); the all-gather receives in place. The first step's own block, the one send that
// waits for nothing, is paced too: chunk k goes once chunk k - W of the predecessor's stream has
// arrived (W: collective.h, chunks_in_flight), so no link holds more than W chunks each way.
//
// Bytes each rank sends: 2(p-1)/p * n (every block but one in each phase); it receives the same
// and reduces (p-1)/p * n. Messages per rank: 2(p-1) * ceil(n / (p * chunk)).
// Cost: 2(p-1) alpha + 2((p-1)/p) n beta + ((p-1)/p) n gamma (plus one alpha per extra chunk
// when the pipeline is not full).
//
// The same two phases serve Communicator::reduce_scatter (phase 1: (p-1) alpha + ((p-1)/p) n beta
// + ((p-1)/p) n gamma) and Communicator::allgather (phase 2: (p-1) alpha + ((p-1)/p) n beta).
#pragma once

#include <cstddef>

#include "comm/algorithm.h"
#include "comm/algorithms/collective.h"

namespace dtrain::comm::detail {

void ring_allreduce(Collective& c, void* data, std::size_t count, DType dtype);
// In place: afterwards block `rank` of data (block_of(count, p, rank)) holds the sum; the other
// blocks hold partial sums.
void ring_reduce_scatter(Collective& c, void* data, std::size_t count, DType dtype);
// In place: block `rank` of data (count elements of elem bytes) is this rank's contribution;
// afterwards every block is filled on every rank.
void ring_allgather(Collective& c, void* data, std::size_t count, std::size_t elem);

CommCost ring_allreduce_cost(int p, int rank, std::size_t count, std::size_t elem, std::size_t chunk_bytes);
CommCost ring_reduce_scatter_cost(int p, int rank, std::size_t count, std::size_t elem, std::size_t chunk_bytes);
CommCost ring_allgather_cost(int p, int rank, std::size_t count, std::size_t elem, std::size_t chunk_bytes);

}  // namespace dtrain::comm::detail
