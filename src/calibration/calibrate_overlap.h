// How much compute and communication slow each other down when they overlap on a worker (the
// profile's node.overlap, used by step_simulation.h), measured the way a data-parallel step
// overlaps them: the compute thread runs the representative layers of the layer bench and hands
// the communication thread (parallel/comm_worker.h), which sleeps between jobs, one 1 MiB
// exchange with a partner rank at a time, as backward hands it a bucket; the next one once the
// last is done and the compute thread has finished the layer it is in. Every rank at once.
//
//   compute share = 1 - (the layers' time beside the exchanges - their time alone)
//                       / (the seconds an exchange was in flight beside them)
//                   the rate compute keeps while communication runs, as step_simulation.h
//                   applies it: between exchanges (while the compute thread finishes the layer it
//                   is in) the communication thread sleeps and compute runs as alone, so the
//                   plain ratio of the two times understated the slowdown by that idle share.
//                   "Alone" is the same layers run just before and just after (the mean), not
//                   the per-layer timings of calibrate_device: those came a minute earlier, one
//                   layer at a time on evicted caches, and the rotation ran 0.82x to 1.13x of
//                   their sum (LeNet, 2 ranks over 1 Gbit/s, 2026-11-29).
//   comm share    = (the exchanges' time alone) / (from handing each over to its end, summed;
//                    the one under way when compute ends counts its time so far)
// Both are means over the ranks that have a partner (calibrate_transport.h: busy_partners),
// clamped to (0, 1]. The exchanges go on until both partners finished their compute, so they
// pair up. Bursts, not a stream: a thread woken for a job gets a core on the scheduler's terms,
// and on ranks that fill the cores a bucket handed over during backward waits for the compute
// threads to block (docs/perfmodel.md: a stream of exchanges kept 27% on 4 ranks of 2 cores,
// bursts 1%, as traces of the training steps show).
#pragma once

#include <string>
#include <vector>

#include "calibration/calibrate_compute.h"
#include "parallel/comm_worker.h"

namespace dtrain::perf {

struct OverlapCalibration {
  bool measured = false;
  double compute_share = 1, comm_share = 1;
  double exchange_seconds = 0;  // one 1 MiB exchange alone
  std::string how;
};

// The compute share above from one rank's measurement: `beside` seconds for work that took
// `alone` seconds alone, with an exchange in flight for `in_flight` of them. 1 where nothing was
// in flight; not clamped (calibrate_overlap clamps the mean over ranks to (0, 1]). InputError
// for negative times or more seconds in flight than beside.
double compute_share_in_flight(double beside, double alone, double in_flight);

// A collective over the worker's ranks. alone_seconds[i]: layer i's time alone (calibrate_device);
// target_seconds: the compute work (at alone speed) to run beside the exchanges.
OverlapCalibration calibrate_overlap(CommWorker& worker, LayerBench& bench, const std::vector<double>& alone_seconds,
                                     const std::vector<int>& partner, double target_seconds);

// The same two shares with the MPI library's allreduce (dtrain's `mpi`) as the communication: one
// 1 MiB MPI_Allreduce over every rank at a time. A blocking MPI collective polls its progress
// engine for as long as it lasts, where dtrain's own collectives yield the core between polls,
// so compute beside it keeps less (LeNet on 2 ranks over 1 Gbit/s, double buffered: forward
// 36 ms beside MPI_Allreduce, 29 ms beside ring, 19 ms alone). Not measured (measured = false)
// for one rank or a transport without a native allreduce.
OverlapCalibration calibrate_mpi_overlap(CommWorker& worker, LayerBench& bench,
                                         const std::vector<double>& alone_seconds, double target_seconds);

}  // namespace dtrain::perf
