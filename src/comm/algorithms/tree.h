// Binomial-tree allreduce: reduce to rank 0 along a binomial tree, then broadcast the sum back
// down the same tree, both chunk by chunk and overlapped (pipelined, as NCCL's and MPICH's trees).
//
// The tree: for a rank r != 0, its parent is r with its lowest set bit cleared; its children are
// r + m for every power of two m below r's lowest set bit (below p for rank 0) with r + m < p.
// Phases and steps (p ranks, n bytes in C chunks, L = ceil(log2 p)):
//   reduce: for chunk k, a rank adds in chunk k of each child (closest child first, a fixed order)
//     and sends the partial sum of chunk k to its parent; rank 0 then holds the sum of chunk k.
//   broadcast: rank 0 sends sum k to its children as soon as it has it; every other rank
//     receives sum k in place once its own chunk k has gone up, and forwards it to its children
//     (largest subtree first). Between chunks a rank tests (Transport::test) which sums have
//     arrived and forwards them, and blocks on sum k - w only before sending chunk k up, where
//     w = max(2L chunks, kLinkWindowBytes) (collective.h; the same on every rank, so the waits
//     go in lockstep), so the two phases run at once: chunk k goes up while chunks before it come
//     down, and every edge carries data both ways. 2L chunks alone (an earlier version) cover the
//     hops but not a link whose far end answers late: LeNet's double-buffered f16 step between 2
//     hosts over 1 Gbit/s took 99 ms against the ring's 82 ms; now 81 ms.
// Bytes each rank sends: n to its parent (not rank 0) and n to each child; it receives as much.
// Rank 0 receives and reduces L*n bytes. Messages: C per edge and direction.
// Cost (the busiest rank; both directions of a link at once): 2L alpha + min(2L n, L n + (2L-1)
// n/C) beta + L n gamma: L n each way at rank 0 (an inner rank: its children's n plus its
// parent's n), plus the pipeline's fill, a chunk per hop up and down; a vector of one or few
// chunks overlaps little and pays at most the 2L n of the two phases one after the other. Still
// log(p) times the ring's bytes per rank, and twice its latency-free time at p = 2 on one host
// (where the bytes are memory copies): a small-message algorithm, or a link-rate one across hosts
// at p = 2, where it matches the ring.
//
// broadcast_tree (Communicator::broadcast) is the broadcast alone from any root, with ranks
// renumbered as (r - root) mod p: L alpha + L n beta, one way.
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
