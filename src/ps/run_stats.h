// What a parameter-server run did, as the servers saw it: the JSONL log's "ps" record and the
// summary line printed at the end of `dtrain train --mode ps`.
//
// Each server keeps its own ServerStats (its gate sees every worker's pushes, so each server's
// gap and tau histograms describe the whole run, seen from its shard). When the last worker is
// done, every server sends its stats to worker 0 as JSON text (ps/protocol.h, kTagStats), and
// worker 0 writes them to the log.
//
// Throughput is measured on the servers, in worker gradients applied per second while every
// worker was still running (from the first push to the first worker's "done"): the rate of the
// rule itself. With a fixed number of steps per worker, a run under ASP with a slow worker ends
// when that worker ends, so its wall time says less than this rate does.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "ps/clock_gate.h"

namespace dtrain::ps {

struct ServerStats {
  int server = 0;
  std::int64_t updates = 0;                // optimizer steps (BSP: one per clock; SSP, ASP: one per push)
  std::int64_t gradients = 0;              // worker gradients applied
  double seconds = 0;                      // from the first push to the last message
  double busy_seconds = 0;                 // summing, applying and copying weights out (the rest is waiting)
  double all_running_seconds = 0;          // from the first push to the first worker's "done"
  std::int64_t all_running_gradients = 0;  // gradients applied in that time
  Histogram gaps, taus;                    // per applied gradient (ps/clock_gate.h)
  std::vector<double> tau_mean_per_worker;
  Histogram queue_depth;                    // messages a poll found ready, over the polls that found any
  std::vector<double> worker_wait_seconds;  // per worker: its time waiting for pushes and pulls
  std::vector<std::int64_t> worker_pushes;  // per worker

  // Worker gradients per second while every worker ran (0 when that window is empty).
  double gradients_per_second() const;
};

nlohmann::json to_json(const ServerStats& s);
// InputError naming the field when `j` is not what to_json wrote.
ServerStats server_stats_from_json(const nlohmann::json& j);

// The log's {"type": "ps", ...} record of a run with `workers` workers: global steps per second
// (W gradients are one global step), each server's stats, and the workers' waits.
nlohmann::json ps_record(const std::vector<ServerStats>& servers, int workers);
// The lines printed at the end of the run: updates, steps/s, server busy share, clock gap and tau
// (histograms included), and each worker's wait.
std::string describe_ps_run(const std::vector<ServerStats>& servers, int workers);

}  // namespace dtrain::ps
