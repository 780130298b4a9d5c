// `dtrain train --mode ps --servers K --sync bsp|ssp|asp [--staleness S]`: parameter-server
// training (src/ps) behind the same trainer. Under mpirun the last K ranks serve and the first
// N - K train; workers shard every global batch as allreduce ranks do, worker 0 alone evaluates
// the whole test set and writes the log (the servers take no part in collectives after start-up).
#pragma once

#include <CLI/CLI.hpp>
#include <cstdint>
#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "apps/dtrain/distributed.h"
#include "optim/optimizer.h"
#include "ps/protocol.h"
#include "ps/ps_updater.h"
#include "train/trace_recorder.h"

namespace dtrain::cli {

struct PsFlags {
  std::string mode = "allreduce";
  int servers = 1;
  std::string sync = "bsp";
  std::int64_t staleness = -1;  // -1: not given
  std::string async_lr = "divided";
  std::string async_momentum = "keep";
};

void add_ps_flags(CLI::App& command, PsFlags& flags);

// What the flags ask for: nullopt for --mode allreduce. Throws InputError naming the fix for a
// parameter-server flag without --mode ps, --mode ps without mpirun, K < 1, K >= the ranks,
// S < 0, --staleness without --sync ssp, --async-* under bsp or compensated momentum for an
// optimizer without momentum. `wire`: the pushes' type (--comm-dtype).
std::optional<ps::PsConfig> ps_config(const PsFlags& flags, const ProcessGroup& group, double timeout_seconds,
                                      DType wire, const OptimizerConfig& optimizer);

// What parameter-server training does not do (double buffering): InputError naming the flag and
// what to use instead.
void check_ps_supports(bool double_buffering);

// For --trace: every worker's string on worker 0 (worker order), point to point, since the
// servers take part in no collective; the other workers get nothing back.
GatherStrings gather_worker_strings(ProcessGroup& group, const ps::PsConfig& config);

// This rank's server (a rank >= the workers) until every worker is done; its stats go to worker
// 0, which prints and logs them. Returns the exit code. `stop_safe` (the workers checkpoint): a
// stop signal (train/stop_signal.h) is the workers' to act on, and the server serves until they
// are done, so that worker 0 can fetch the state its last checkpoint holds.
int run_parameter_server(ProcessGroup& group, const ps::PsConfig& config, const OptimizerConfig& optimizer,
                         std::int64_t parameters, bool stop_safe);

// Worker 0 after training: prints the servers' stats (ps/run_stats.h) and, with the model's
// `predicted_step` (seconds per global step), predicted beside measured; returns the log record.
nlohmann::json report_ps_run(const ps::PsUpdater& worker, int workers, std::optional<double> predicted_step);

// How the workers agree on a stop (train/stop_extension.h): under BSP through worker 0, so all
// stop after the same clock (ps::PsWorker::agree_stop; `worker` is read at each call, after the
// updater exists); under SSP and ASP each worker stops on its own signal, as Slurm sends one to
// every task (their runs do not repeat bitwise anyway, and a finished worker holds nobody back).
std::function<int(int)> ps_stop_agreement(const ps::PsConfig& config, ps::PsUpdater* const& worker);

}  // namespace dtrain::cli
