// Seconds of one allreduce on a profile's machine: the exact per-rank counts of the algorithm's
// own cost function (comm::allreduce_cost, checked against an instrumented transport in
// tests/comm) charged with the alpha, beta and gamma of the links the ranks use.
//
// Ranks are placed node-major (ranks 0..k-1 on the first node of k accelerators, and so on).
//   - All ranks in one node: the intra-node link; where it has an exchange ladder (profile.h:
//     dtrain calibrate's same-host link), beta is the ladder's seconds per byte at the bytes the
//     slowest rank pulls (pulled_bytes: what it receives, the receiver making the copy), not the
//     slope of the largest sizes: a 1 MiB bucket's copies stay in the caches.
//   - Flat (what dtrain's collectives do today): one algorithm over all p ranks. Every step
//     waits for its slowest message, so once the ranks span nodes the network's latency and
//     bandwidth bound the whole collective (steps that stay inside a node are charged at the
//     network's rate too: an upper bound). Where several ranks of a node send across nodes in
//     the same step they share the node's network link, dividing its bandwidth (nic_flows).
//   - Hierarchical (as NCCL and Goyal et al. 2017 do; a model option, not yet in dtrain's
//     code): a ring allreduce inside each node on the intra-node link (its reduce-scatter and
//     all-gather phases), and between them the chosen algorithm over the nodes on each rank's
//     1/k share of the data, the k shares of a node crossing its network link side by side.
//   - Across nodes, `network_transfer` is the part of the time a link's burst allowance can
//     remove (step_simulation.h spends it where the link idled long enough to refill it).
//   - `mpi` on a profile that timed the MPI library's allreduce for this many workers (dtrain
//     calibrate: profile.h, MeasuredAllreduce): the measured times, interpolated in bytes.
//   - `shm` (comm/algorithms/shared_memory.h): every worker must be on one node (InputError
//     otherwise). On a profile that timed it for this many workers (profile.h: shm_allreduce),
//     the measured times, interpolated in bytes; otherwise its cost's terms (comm::allreduce_cost:
//     2 rounds, beta bytes, bytes reduced) at the node's core round trip per round (the intra-node
//     link's latency where absent), the device's gradient-copy rate per byte moved and its reduce
//     rate. It sends no messages, so no link's bandwidth enters.
#pragma once

#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

#include "comm/algorithm.h"
#include "perfmodel/profile.h"
#include "tensor/dtype.h"

namespace dtrain::perf {

struct AllreducePlan {
  comm::Algorithm algorithm = comm::Algorithm::kRing;
  int workers = 1;
  bool hierarchical = false;
  DType dtype = DType::kF32;
  std::size_t chunk_bytes = comm::kDefaultChunkBytes;
};

struct AllreduceTime {
  double seconds = 0;
  double latency = 0;  // the part charged to alpha (rounds * alpha)
  // Where the ranks span nodes: the part charged to bytes crossing the network (the slowest
  // rank's beta bytes at the network's rate; for a measured `mpi` ladder, the time above its
  // zero-byte intercept), which a link's burst allowance can pass at once (profile.h: burst).
  double network_transfer = 0;
};

AllreduceTime allreduce_time(const AllreducePlan& plan, std::size_t count, const Profile& profile);

// Whether shm is a candidate for `workers` workers on `profile`: more than one, all on one node
// (node-major placement: workers <= accelerators; shm needs every rank on one host), and the
// profile has shm_allreduce timed for that worker count. Its formula alone (allreduce_time.h)
// prices memory traffic with rates measured for other purposes, too rough to pick it over a
// collective that runs anywhere, and a spec-sheet GPU profile has no shared memory between
// devices to run it on. The trainer's `auto` without a profile's choice runs shm wherever every
// rank is on one host (parallel/data_parallel.h); the model's `auto` follows it where this holds,
// else the communicator's size rule (step_model.cpp).
bool shm_candidate(const Profile& profile, int workers);

// The profile's measured allreduce that prices `plan`, or null: mpi_allreduce for `mpi` (not
// hierarchical), shm_allreduce for shm, each only where timed for plan.workers.
const MeasuredAllreduce* measured_allreduce_for(const AllreducePlan& plan, const Profile& profile);

// Seconds of an allreduce of `bytes` from measured points: linear in bytes between the two points
// around it (time is an affine function of the bytes between sizes where the library keeps its
// algorithm), along the last two points' line above the largest and the first two points' line
// below the smallest (never below a tenth of the smallest time); one point scales with the bytes.
double interpolate_measured(const MeasuredAllreduce& m, double bytes);
// The same interpolation over (bytes, seconds) points, bytes ascending (non-empty).
double interpolate_points(const std::vector<std::pair<double, double>>& points, double bytes);

// On one host a message is a copy its receiver makes: Open MPI's shared-memory transport moves a
// large message by single-copy get (CMA), the receiver reading the sender's pages. So a rank's own
// copying is what it receives, and its sends hold it only until its peers, copying side by side,
// have pulled them: past its last receive, one message (the pipeline's last chunk). Its bytes at
// the ladder's rate are min(beta_bytes, bytes_received + that message); beta_bytes, the larger
// direction per step, bounds them where sends and receives alternate (ring and butterfly, the
// same either way). One-to-all's root pulls (p-1) n and its leaves the last chunk c of the sum,
// (p-1) n + c, where a link that the root must push through pays (p-1)(n + c): on 4 ranks of
// the 2-core VM a 1 MiB one-to-all took 357 us (fast core state), which the ladder priced at 584
// us from 6 MiB and prices at 424 us from 4 MiB; the pipelined tree's 1 MiB, 294 us (236-356),
// at 454 and 379.
std::uint64_t pulled_bytes(const comm::CommCost& cost);

// How many of a node's k ranks send across the node boundary in the same step, for a flat
// algorithm over more than one node with node-major ranks: ring 1 (one ring edge leaves each
// node), tree 1 (the cross-node edges of a binomial tree join multiples of k), one-to-all 1 (the
// root's link carries everything), butterfly k (every rank exchanges with a partner in another
// node at distances >= k), mpi 1 (its estimate is a ring above 10 KiB).
int nic_flows(comm::Algorithm a, int per_node);

// comm::predict_allreduce_seconds (the slowest rank), evaluated on every rank up to 64 ranks and
// on the ranks whose role differs beyond that (the ends, the middle, both sides of the
// larger-block boundary and of the butterfly's fold); tests check it equals the full scan.
double slowest_rank_seconds(comm::Algorithm a, int p, std::size_t count, DType dtype,
                            const comm::AlphaBetaGamma& machine, std::size_t chunk_bytes);

}  // namespace dtrain::perf
