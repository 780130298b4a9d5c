// Binomial-tree allreduce: reduce to rank 0 along a binomial tree, then broadcast the sum back
// down the same tree.
//
// The tree: for a rank r != 0, its parent is r with its lowest set bit cleared; its children are
// r + m for every power of two m below r's lowest set bit (below p for rank 0) with r + m < p.
// Phases and steps (p ranks, n bytes, L = ceil(log2 p)):
//   1. reduce, L steps: in step k (m = 2^k) every rank with lowest set bit m sends its partial sum
//      (the whole vector) to r - m and drops out; the receiver adds it in.
//   2. broadcast, L steps: the same edges in reverse; a rank forwards each chunk of the sum to its
//      children, largest subtree first, as soon as it arrives (pipelined).
// Bytes each rank sends: n to its parent (not rank 0) and n to each child; rank 0 sends L*n, a
// leaf n. Rank 0 receives and reduces L*n bytes. Messages: ceil(n / chunk) per edge.
// Cost (critical path through rank 0): 2L alpha + 2L n beta + L n gamma. Latency-bound like the
// butterfly but moves log(p) times more bytes per rank than the ring: a small-message algorithm.
//
// broadcast_tree (Communicator::broadcast) is phase 2 alone from any root, with ranks renumbered
// as (r - root) mod p: L alpha + L n beta.
#pragma once

#include <cstddef>

#include "comm/algorithm.h"
#include "comm/algorithms/collective.h"

namespace dtrain::comm::detail {

void tree_allreduce(Collective& c, void* data, std::size_t count, DType dtype);
// `count` elements of `elem` bytes from `root` to every rank.
void broadcast_tree(Collective& c, void* data, std::size_t count, std::size_t elem, int root);

CommCost tree_allreduce_cost(int p, int rank, std::size_t count, std::size_t elem, std::size_t chunk_bytes);
CommCost broadcast_tree_cost(int p, int rank, std::size_t count, std::size_t elem, std::size_t chunk_bytes, int root);

}  // namespace dtrain::comm::detail
