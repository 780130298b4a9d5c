// The transport half of `dtrain calibrate`: where the ranks are, and the alpha, beta and gamma
// of the messages between them, measured through the transport the collectives use
// (comm/transport.h; MPI under mpirun), in the terms comm/algorithm.h charges:
//
//   hosts        comm/hosts.h: host name and network namespace, so two namespaces on one
//                machine (emulated hosts, tools/netns_hosts.sh) count as two hosts;
//   alpha        half the round trip of a 64-byte ping-pong (mean over batches of them);
//   beta         every step of the collectives sends and receives at once (a ring step, a
//                butterfly exchange), so beta is the slope of a simultaneous exchange between two
//                ranks: (T(n) - T(n/2)) / (n/2), n doubled from 256 KiB until T(n) takes 50 ms
//                (at least 512 KiB, at most 16 MiB), sent in the chunks the communicator's
//                collectives use (its chunk_bytes: comm/hosts.h chooses them by host layout, so
//                a calibration under the run's layout measures the run's messages), half of them
//                received through the window of two chunks the reductions use and half freely,
//                as every allreduce receives them (exchange_bytes); the median over paired rounds
//                of T(n) - T(n/2); two large sizes, so that a link's burst allowance (tc tbf's
//                bucket) cancels out of the slope. Every exchange sends the bytes the exchange
//                before it received (a timed one follows an untimed one of its size), as a
//                collective sends bytes it has just written: pulled from another core's cache
//                they cost more than bytes that sit in memory;
//   ladder       on one host: the time of one simultaneous exchange above a 64-byte one (the
//                median over paired rounds, as the slope) at 64 KiB x 4^k up to the slope's
//                largest size, since copies that stay in the caches cost less per byte than the
//                slope's (profile.h: ExchangeLadder); with more than one pair on the host, also
//                with the first pair alone while the other ranks wait. Where a host's ranks
//                outnumber its CPUs, the same-host link (latency, slopes, ladder) is timed with
//                each pair pinned to a CPU of its own (pinned_pairs.h);
//   burst        across hosts: what an exchange of half the slope's largest size saves after the
//                link idled for twice its time, against one straight after it (median of 5
//                rounds), times the bandwidth: a token-bucket shaper's allowance (tc tbf's burst),
//                which the slope's differences leave out;
//   one way      the slope of ping-pongs of the same two sizes (half a round trip each), for the
//                collectives that move data one direction at a time (a broadcast; every allreduce,
//                tree and one-to-all included, pipelines both directions and pays beta);
//   gamma        where ranks share a host, comm::reduce_sum adding 1 MiB of f32 into the buffer
//                a same-host exchange has just sent, from the one it received into, all pairs at
//                once (the median of 21 rounds): a collective adds into bytes its peer has just
//                read, which this core must take back first; with no two ranks on a host, adding
//                4 MiB of f32 into 4 MiB of private memory (1 / bytes per second); the same
//                bytes again as f16 and as bf16 (16-bit sums widen to f32 and round back, so
//                their gamma per byte is their own);
//   MPI          the MPI library's own allreduce (dtrain's `mpi`) of f32 over all the ranks, at
//                4 KiB x 2^k up to the first size one call of which takes 0.5 s and that
//                holds the largest message of the runs predicted (at most 64 MiB): a warm-up
//                pass, then 3 to 20 rounds of every size in ascending order (a step's buckets
//                come in mixed sizes), each call after a barrier, the mean of a size's calls.
//                The library picks its algorithm and protocol by size, so the model
//                interpolates these times rather than pricing an algorithm it cannot see
//                (allreduce_time.h);
//   shm          where the ranks share memory and are all on one host: dtrain's `shm` allreduce
//                of f32 over all the ranks on one buffer from allocate_shared (in place, as on
//                the trainer's buckets), at the same sizes up to the first one call of which
//                takes 0.1 s: a warm-up pass, then 3 to 10 rounds in ascending order, each call
//                after a barrier, the median of a size's calls. Its cost is memory traffic
//                between cores, whose rate the caches set by size, so the model interpolates
//                these times too.
// Same-host pairs are measured all at once (ranks sharing a host share its cores and memory in a
// collective too); across hosts one pair measures the link alone (the model divides it among the
// flows that share it, allreduce_time.h). A host with one rank has no same-host partner: its
// rank messages itself, the transport's local path.
#pragma once

#include <cstddef>
#include <string>
#include <utility>
#include <vector>

#include "comm/communicator.h"

namespace dtrain::perf {

struct LinkMeasurement {
  bool measured = false;
  double latency = 0;            // seconds per message (alpha)
  double bandwidth = 0;          // bytes per second per direction, both directions busy (1 / beta)
  double one_way_bandwidth = 0;  // bytes per second, one direction at a time (ping-pong slope)
  std::size_t bytes = 0;         // the largest exchange of the slope
  int pairs = 0;                 // pairs measured side by side
  std::string how;               // "2 pairs side by side", "rank 0 with itself", ...
  // (bytes, seconds above a 64-byte exchange); measured on the same-host link only: with all
  // pairs side by side, and (more than one pair) with the first pair alone.
  std::vector<std::pair<std::size_t, double>> ladder, ladder_one_pair;
  // Across hosts: bytes per direction the link passes at once after idling (profile.h: burst).
  double burst = 0;
  std::string burst_how;
};

struct TransportCalibration {
  std::vector<int> host_of;             // rank -> host index (in order of first rank)
  std::vector<std::string> host_names;  // per host
  int ranks_per_host = 1;               // the most ranks on one host
  LinkMeasurement same_host, across_hosts;
  double reduce = 0;                       // bytes per second of f32 additions (1 / gamma), mean over ranks
  double reduce_f16 = 0, reduce_bf16 = 0;  // the same of 16-bit additions
  // (bytes, seconds) of MPI_Allreduce over all ranks; empty for one rank or a transport without
  // a native allreduce.
  std::vector<std::pair<std::size_t, double>> mpi_allreduce;
  // (bytes, seconds) of the shm allreduce over all ranks; empty for one rank or ranks that do not
  // share memory.
  std::vector<std::pair<std::size_t, double>> shm_allreduce;
};

// A collective: every rank of `comm` calls it; the result is the same on every rank.
// `largest_message`: the bytes of the largest allreduce the runs predicted send (the chosen
// models' gradients), which the MPI ladder reaches (0: no such floor).
TransportCalibration calibrate_transport(comm::Communicator& comm, double min_seconds, std::size_t largest_message);

// One simultaneous exchange of `bytes` with `peer` (itself: a message to itself), in the
// collectives' chunks, the first half received through their reduction window, on the
// calibration's own message tag.
void exchange_bytes(comm::Communicator& comm, int peer, const void* send, void* recv, std::size_t bytes);
// Mean seconds of one exchange of `bytes` between partners (partner[r]: r's partner, -1 idle),
// all pairs at once, over the active ranks; a collective, the same on every rank.
double time_exchanges(comm::Communicator& comm, const std::vector<int>& partner, std::size_t bytes, double min_seconds);
// The shm column of the calibration (see above): (bytes, seconds) of dtrain's shm allreduce over
// all ranks; empty for one rank or ranks that do not share memory. A collective, the same on
// every rank; it keeps max-size bytes of shared memory per rank for the communicator's life.
std::vector<std::pair<std::size_t, double>> time_shm_allreduce(comm::Communicator& comm, double min_seconds);
// A measured allreduce ladder (bytes ascending) with its stalled sizes replaced. A size whose
// calls stalled in most rounds gets past the stall filter (calls over 3x their size's median):
// over the 1 Gbit/s emulated link one calibration of mlp timed 512 KiB at 9.6 ms between 2.1 ms
// at 256 KiB and 9.6 ms at 1 MiB, and priced its f16 `mpi` step at 19 ms where it takes 12.
// Between sizes where the library keeps its algorithm, time is affine in bytes, and where it
// changes protocol the time per byte steps up for every larger size too; so a size more than
// kStallChord times the chord of its two neighbours (the original points) stalled, and takes
// the chord's value. Then, from the top down, no size is kept slower than a larger one, since
// an allreduce of fewer bytes can always run as one of more (the first size, 4 KiB, often came
// out slower than 8 KiB).
inline constexpr double kStallChord = 1.5;
void drop_stalled_sizes(std::vector<std::pair<std::size_t, double>>& ladder);
// Pairs for measuring communication beside compute: consecutive ranks of each host when a host
// has two, else the first rank of host 0 with the first of host 1; empty with one rank.
std::vector<int> busy_partners(const TransportCalibration& t);

}  // namespace dtrain::perf
