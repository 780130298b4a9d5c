// `dtrain train --mode ps --servers K --sync bsp|ssp|asp [--staleness S]`: parameter-server
// training (src/ps) behind the same trainer. Under mpirun the last K ranks serve and the first
// N - K train; workers shard every global batch as allreduce ranks do, worker 0 alone evaluates
// the whole test set and writes the log (the servers take no part in collectives after start-up).
#pragma once

#include <CLI/CLI.hpp>
#include <cstdint>
#include <optional>
#include <string>

#include "apps/dtrain/distributed.h"
#include "optim/optimizer.h"
#include "ps/protocol.h"
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
// 0, which prints and logs them. Returns the exit code.
int run_parameter_server(ProcessGroup& group, const ps::PsConfig& config, const OptimizerConfig& optimizer,
                         std::int64_t parameters);

}  // namespace dtrain::cli
