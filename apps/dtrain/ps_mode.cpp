#include "apps/dtrain/ps_mode.h"

#include <fmt/format.h>

#include "core/error.h"
#include "ps/server.h"

namespace dtrain::cli {

void add_ps_flags(CLI::App& command, PsFlags& flags) {
  command
      .add_option("--mode", flags.mode,
                  "allreduce (every rank trains) or ps (under mpirun: the last --servers ranks hold the "
                  "parameters and apply the optimizer, the others train)")
      ->capture_default_str();
  command.add_option("--servers", flags.servers, "--mode ps: parameter-server ranks K (1..N-1)")->capture_default_str();
  command
      .add_option("--sync", flags.sync,
                  "--mode ps: bsp (every clock waits for all workers), ssp (bounded staleness, --staleness S) "
                  "or asp (no wait)")
      ->capture_default_str();
  command.add_option("--staleness", flags.staleness, "--sync ssp: how many clocks a worker may run ahead (S >= 0)");
}

std::optional<ps::PsConfig> ps_config(const PsFlags& f, const ProcessGroup& group, double timeout_seconds, DType wire) {
  if (f.mode == "allreduce") {
    if (f.servers != 1 || f.sync != "bsp" || f.staleness >= 0) {
      throw InputError("--servers, --sync and --staleness apply to parameter-server training: add --mode ps");
    }
    return std::nullopt;
  }
  if (f.mode != "ps") throw InputError(fmt::format("unknown --mode '{}'; valid: allreduce, ps", f.mode));
  if (!group.active()) {
    throw InputError(
        "--mode ps needs several processes: start it under mpirun with K servers and at least one worker, e.g. "
        "mpirun -np 4 dtrain train --mode ps --servers 1");
  }
  if (f.servers < 1 || f.servers >= group.size) {
    throw InputError(fmt::format("--servers {} with {} ranks leaves no {}: give 1..{}", f.servers, group.size,
                                 f.servers < 1 ? "server" : "worker", group.size - 1));
  }
  ps::PsConfig c;
  c.sync = ps::parse_sync_mode(f.sync);
  if (f.staleness >= 0 && c.sync != ps::SyncMode::kSsp) {
    throw InputError(fmt::format("--staleness bounds --sync ssp; with --sync {} it has no meaning", f.sync));
  }
  if (c.sync == ps::SyncMode::kSsp && f.staleness < 0) {
    throw InputError("--sync ssp needs --staleness S (clocks a worker may run ahead of the slowest, S >= 0)");
  }
  c.servers = f.servers;
  c.workers = group.size - f.servers;
  c.staleness = std::max<std::int64_t>(0, f.staleness);
  c.timeout_seconds = timeout_seconds;
  c.wire = wire;
  c.validate(group.size);
  return c;
}

void check_ps_supports(bool double_buffering, const std::string& trace) {
  const auto refuse = [](const char* flag) {
    throw InputError(fmt::format("{} is not available with --mode ps yet; leave it out or use --mode allreduce", flag));
  };
  if (double_buffering) refuse("--double-buffering");
  if (!trace.empty()) refuse("--trace");
}

int run_parameter_server(ProcessGroup& group, const ps::PsConfig& config, const OptimizerConfig& optimizer,
                         std::int64_t parameters) {
  // The communication thread stays idle from here on: the server is the only user of MPI.
  ps::ParameterServer server(group.comm->transport(), config, optimizer, parameters);
  server.run();  // its stats go to worker 0, which prints and logs them
  return 0;
}

}  // namespace dtrain::cli
