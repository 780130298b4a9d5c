#include "apps/dtrain/ps_mode.h"

#include <fmt/format.h>

#include "comm/transport.h"
#include "core/error.h"
#include "ps/run_stats.h"
#include "ps/server.h"
#include "train/stop_signal.h"

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
  command
      .add_option("--async-lr", flags.async_lr,
                  "--sync ssp|asp: each push's learning rate: divided (lr / workers), staleness (lr / tau, Zhang et "
                  "al. 2016) or full (lr; diverges with momentum)")
      ->capture_default_str();
  command
      .add_option("--async-momentum", flags.async_momentum,
                  "--sync ssp|asp: keep the momentum or compensate (mu - (1 - 1/workers): asynchrony adds that much, "
                  "Mitliagkas et al. 2016)")
      ->capture_default_str();
}

std::optional<ps::PsConfig> ps_config(const PsFlags& f, const ProcessGroup& group, double timeout_seconds, DType wire,
                                      const OptimizerConfig& optimizer) {
  if (f.mode == "allreduce") {
    if (f.servers != 1 || f.sync != "bsp" || f.staleness >= 0 || f.async_lr != "divided" ||
        f.async_momentum != "keep") {
      throw InputError(
          "--servers, --sync, --staleness, --async-lr and --async-momentum apply to parameter-server training: add "
          "--mode ps");
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
  c.async_lr = ps::parse_async_lr(f.async_lr);
  c.async_momentum = ps::parse_async_momentum(f.async_momentum);
  c.validate(group.size);
  if (optimizer.name == "lars" || optimizer.name == "lamb") {
    throw InputError(
        fmt::format("--optimizer {} scales each layer by its whole norm, and a server holds a flat range "
                    "of the parameters, not layers: use --mode allreduce with it",
                    optimizer.name));
  }
  if (optimizer.name == "rmsprop-warmup") {
    throw InputError(
        "--optimizer rmsprop-warmup follows the training epoch, which a server does not know: use --mode allreduce "
        "with it");
  }
  if (!optimizer.decay_1d) {
    throw InputError(
        "--decay-bn-bias off tells biases and batch-norm parameters from weights by their shape, and a server holds "
        "a flat range of the parameters: with --mode ps give --decay-bn-bias on");
  }
  // Every rank checks what the servers will run, so a bad combination stops them all alike.
  (void)ps::server_optimizer(optimizer, c.async_momentum, ps::sync_mode_name(c.sync), c.workers);
  return c;
}

void check_ps_supports(bool double_buffering) {
  // Double buffering applies each step's gradients one step late: that is SSP with S = 1 (or ASP),
  // which the servers do without an extra copy of the gradients.
  if (double_buffering) {
    throw InputError(
        "--double-buffering overlaps an allreduce with the next step; with --mode ps use --sync ssp --staleness 1 "
        "(a worker may read weights that lack the last clock's gradients, as double buffering does) or --sync asp");
  }
}

GatherStrings gather_worker_strings(ProcessGroup& group, const ps::PsConfig& config) {
  return [&group, config](const std::string& mine) {
    comm::Transport& t = group.comm->transport();
    const auto deadline = comm::Deadline::after(config.timeout_seconds > 0 ? 1.25 * config.timeout_seconds + 1 : 0);
    if (t.rank() != 0) {
      const std::uint64_t n = mine.size();
      t.send(&n, sizeof n, 0, ps::kTagTrace, deadline, "the trace's length to worker 0");
      t.send(mine.data(), mine.size(), 0, ps::kTagTrace, deadline, "the trace to worker 0");
      return std::vector<std::string>{};
    }
    std::vector<std::string> out{mine};
    for (int w = 1; w < config.workers; ++w) {
      std::uint64_t n = 0;
      t.recv(&n, sizeof n, w, ps::kTagTrace, deadline, fmt::format("worker {}'s trace length", w));
      std::string text(n, '\0');
      t.recv(text.data(), text.size(), w, ps::kTagTrace, deadline, fmt::format("worker {}'s trace", w));
      out.push_back(std::move(text));
    }
    return out;
  };
}

int run_parameter_server(ProcessGroup& group, const ps::PsConfig& config, const OptimizerConfig& optimizer,
                         std::int64_t parameters, bool stop_safe) {
  if (stop_safe) install_stop_signals();
  // The communication thread stays idle from here on: the server is the only user of MPI.
  ps::ParameterServer server(group.comm->transport(), config, optimizer, parameters);
  server.run();  // its stats go to worker 0, which prints and logs them
  return 0;
}

nlohmann::json report_ps_run(const ps::PsUpdater& worker, int workers, std::optional<double> predicted_step) {
  const auto& stats = worker.worker().server_stats();
  nlohmann::json record = ps::ps_record(stats, workers);
  fmt::print("{}", ps::describe_ps_run(stats, workers));
  if (predicted_step) {
    // The model's global step against the servers' measured rate.
    const double predicted = 1.0 / *predicted_step, measured = record["steps_per_second"].get<double>();
    record["predicted_steps_per_second"] = predicted;
    fmt::print("global steps/s: predicted {:.2f}, measured {:.2f}: {:+.1f}%\n", predicted, measured,
               measured > 0 ? 100 * (predicted - measured) / measured : 0.0);
  }
  return record;
}

std::function<int(int)> ps_stop_agreement(const ps::PsConfig& config, ps::PsUpdater* const& worker) {
  if (config.sync != ps::SyncMode::kBsp) return [](int mine) { return mine; };
  return [&worker](int mine) { return worker->agree_stop(mine); };
}

}  // namespace dtrain::cli
