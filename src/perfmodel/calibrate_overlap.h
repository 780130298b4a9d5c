// How much compute and communication slow each other down when they overlap on a worker (the
// profile's node.overlap, used by step_simulation.h), measured the way a data-parallel step
// overlaps them: the communication thread (parallel/comm_worker.h) exchanges 1 MiB messages with
// a partner rank through the transport while the compute thread runs the representative layers
// of the layer bench, on every rank at once.
//
//   compute share = (the layers' time alone) / (their time beside the exchanges)
//   comm share    = (the exchanges' time alone) / (their time beside the layers)
// Both are means over the ranks that have a partner (calibrate_transport.h: busy_partners),
// clamped to (0, 1]. The exchanges go on until both partners finished their compute, so neither
// side ever computes without the other communicating.
#pragma once

#include <string>
#include <vector>

#include "parallel/comm_worker.h"
#include "perfmodel/calibrate_compute.h"

namespace dtrain::perf {

struct OverlapCalibration {
  bool measured = false;
  double compute_share = 1, comm_share = 1;
  double exchange_seconds = 0;  // one 1 MiB exchange alone
  std::string how;
};

// A collective over the worker's ranks. alone_seconds[i]: layer i's time alone (calibrate_device);
// target_seconds: the compute work (at alone speed) to run beside the exchanges.
OverlapCalibration calibrate_overlap(CommWorker& worker, LayerBench& bench, const std::vector<double>& alone_seconds,
                                     const std::vector<int>& partner, double target_seconds);

}  // namespace dtrain::perf
