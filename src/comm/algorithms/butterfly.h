// Butterfly allreduce: Rabenseifner's recursive halving (reduce-scatter) then recursive doubling
// (all-gather), for any number of ranks; small vectors skip the halving (recursive doubling).
//
// Let q be the largest power of two <= p and e = p - q. Phases and steps (n bytes):
//   0. fold (only when e > 0): among ranks 0 .. 2e-1, each even rank sends its whole vector to the
//      odd rank above it, which adds it in; the even ranks then wait for phase 3. The q remaining
//      ranks are renumbered 0 .. q-1 (odd rank 2i+1 -> i, rank r >= 2e -> r - e), as MPICH does.
//   1. recursive halving, log2 q steps: the vector is cut into q blocks; in step k (distance
//      d = q / 2^(k+1)) a rank exchanges with the rank whose new number differs in bit d, keeps
//      the half of its current block range on its side of that bit, sends the other half and adds
//      the partner's copy of the kept half. After the last step new rank i holds block i summed.
//   2. recursive doubling, log2 q steps: the same exchanges in reverse order (d = 1, 2, ...), each
//      rank sending the range it holds and receiving the partner's adjacent range.
//   3. unfold (e > 0): each odd rank of phase 0 sends the whole result to the even rank below it.
// Bytes each rank sends (q ranks taking part): (q-1)/q * n in each of phases 1 and 2; in phase 0
// an even rank sends n and an odd rank receives and reduces n; in phase 3 the reverse.
// Messages: one per chunk of each exchange; in phases 1 and 2 a rank sends chunk k once chunk
// k - W of its partner's has arrived (W: collective.h, chunks_in_flight), both partners sending at
// once without filling the link's queue both ways. Rank i reduces (q-1)/q * n (+ n when it folded one in).
// Cost: 2 log2(q) alpha + 2((q-1)/q) n beta + ((q-1)/q) n gamma, plus 2 alpha + 2 n beta + n gamma
// when p is not a power of two. Latency grows with log p (ring: p), bandwidth term as the ring's.
//
// Small vectors (n <= kButterflyDoublingMaxBytes): phases 1-2 become one recursive doubling
// (distance d = 1, 2, ..., q/2: exchange whole vectors and add), log2 q (alpha + n beta + n gamma).
// Halving saves bytes but costs log2 q extra latencies. With alpha ~ 1 us and beta, gamma ~ 0.1
// ns per byte (shared memory) latency dominates up to several KiB, but Open MPI's shared-memory
// transport sends messages above 4 KiB with an extra handshake (rendezvous), so the threshold
// keeps whole-vector messages below that.
#pragma once

#include <cstddef>

#include "comm/algorithm.h"
#include "comm/algorithms/collective.h"

namespace dtrain::comm::detail {

constexpr std::size_t kButterflyDoublingMaxBytes = std::size_t{2} << 10;
bool butterfly_uses_doubling(std::size_t bytes);

void butterfly_allreduce(Collective& c, void* data, std::size_t count, DType dtype);
CommCost butterfly_allreduce_cost(int p, int rank, std::size_t count, std::size_t elem, std::size_t chunk_bytes);

}  // namespace dtrain::comm::detail
