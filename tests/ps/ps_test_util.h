// Runs a parameter-server world on the local-threads transport: ranks 0..W-1 run the test's
// worker function, ranks W..W+K-1 a ParameterServer each; returns what the servers hold at the end.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <functional>
#include <mutex>
#include <vector>

#include "comm/local_transport.h"
#include "core/threads.h"
#include "optim/optimizer.h"
#include "ps/clock_gate.h"
#include "ps/protocol.h"
#include "ps/ps_worker.h"
#include "ps/run_stats.h"
#include "ps/server.h"

namespace dtrain::ps::testing {

struct ServerOutcome {
  FlatRange range;
  std::vector<float> weights;
  Histogram gaps, taus;
  std::vector<Histogram> worker_taus;
  std::int64_t updates = 0;
  ServerStats stats;  // as the server counted them
};

struct PsOutcome {
  std::vector<float> weights;  // the servers' shards end to end: the flat parameters
  std::vector<ServerOutcome> servers;
};

// A short timeout, so a broken protocol fails the test in seconds instead of hanging.
inline PsConfig test_config(int workers, int servers, SyncMode sync, std::int64_t staleness = 0) {
  PsConfig c;
  c.workers = workers;
  c.servers = servers;
  c.sync = sync;
  c.staleness = staleness;
  c.timeout_seconds = 60;
  return c;
}

inline PsOutcome run_ps(const PsConfig& config, const OptimizerConfig& optimizer, std::int64_t total_elements,
                        const std::function<void(comm::Transport&)>& worker) {
  PsOutcome out;
  out.servers.resize(static_cast<std::size_t>(config.servers));
  comm::run_local_transports(config.world_size(), [&](comm::Transport& t) {
    set_num_threads(1);
    if (!config.is_server(t.rank())) {
      worker(t);
      return;
    }
    ParameterServer server(t, config, optimizer, total_elements);
    server.run();
    ServerOutcome& o = out.servers[static_cast<std::size_t>(server.index())];
    o.range = server.range();
    o.weights = server.weights().to_vector();
    o.gaps = server.gate().gaps();
    o.taus = server.gate().taus();
    o.updates = server.updates();
    o.stats = server.stats();
    for (int w = 0; w < config.workers; ++w) o.worker_taus.push_back(server.gate().taus_of(w));
  });
  for (const ServerOutcome& s : out.servers) out.weights.insert(out.weights.end(), s.weights.begin(), s.weights.end());
  return out;
}

// The constant-push check: tensors of 7, 10 and 4 elements (with 2 or 3 servers the middle one is
// split between two), worker 0's initial weights 100 t + e (tensor t, element e), and worker w
// pushing the gradient w + 1 for every element at every clock.
inline const std::vector<std::int64_t>& split_sizes() {
  static const std::vector<std::int64_t> sizes{7, 10, 4};
  return sizes;
}
inline std::int64_t split_total() { return 21; }

inline OptimizerConfig plain_sgd(double lr) {
  OptimizerConfig o;
  o.lr = lr;
  o.momentum = 0;
  return o;
}

// The flat weights after every worker's `clocks` pushes of (w + 1), each moving the weights by
// exactly its value (per-push learning rate 1: --lr W).
inline std::vector<float> constant_push_result(int workers, int clocks) {
  const float pushed = static_cast<float>(clocks * workers * (workers + 1) / 2);
  std::vector<float> out;
  for (std::size_t t = 0; t < split_sizes().size(); ++t) {
    for (std::int64_t e = 0; e < split_sizes()[t]; ++e) out.push_back(static_cast<float>(100 * t) + e - pushed);
  }
  return out;
}

// Worker `t.rank()` of the constant-push check: `clocks` steps at learning rate `lr`, calling
// `compute(c)` (a sleep standing in for forward and backward) before the push of clock c.
// Worker 0 stores the stats the servers sent it in `reported` when given. `between(c, worker)`,
// when given, runs before compute(c) (a pause, as the trainer's end of an epoch).
inline void constant_push_worker(comm::Transport& t, const PsConfig& config, int clocks, double lr,
                                 const std::function<void(int)>& compute = {},
                                 std::vector<ServerStats>* reported = nullptr,
                                 const std::function<void(int, PsWorker&)>& between = {}) {
  const auto& sizes = split_sizes();
  std::vector<std::vector<float>> params, grads;
  for (std::size_t i = 0; i < sizes.size(); ++i) {
    params.emplace_back(static_cast<std::size_t>(sizes[i]), 0.0f);
    grads.emplace_back(static_cast<std::size_t>(sizes[i]), static_cast<float>(t.rank() + 1));
    // Worker 0's values start the servers; other workers' are overwritten by the first pull.
    for (std::size_t e = 0; e < params[i].size(); ++e) {
      params[i][e] = t.rank() == 0 ? static_cast<float>(100 * i + e) : -12345.0f;
    }
  }
  std::vector<float*> p;
  std::vector<const float*> g;
  for (std::size_t i = 0; i < sizes.size(); ++i) {
    p.push_back(params[i].data());
    g.push_back(grads[i].data());
  }
  PsWorker worker(t, config, sizes);
  worker.start(p);
  // Under BSP nobody pushes before every worker has read clock 0; SSP and ASP may let a fast
  // worker's first pushes in before a slow one reads.
  if (config.sync == SyncMode::kBsp) {
    EXPECT_EQ(params[1][3], 103.0f) << "every worker starts from worker 0's parameters";
  }
  for (int c = 0; c < clocks; ++c) {
    if (between) between(c, worker);
    if (compute) compute(c);
    worker.step(g, lr, p);
  }
  EXPECT_EQ(worker.clock(), clocks);
  worker.finish();
  EXPECT_EQ(worker.server_stats().size(), t.rank() == 0 ? static_cast<std::size_t>(config.servers) : 0U);
  if (reported != nullptr && t.rank() == 0) *reported = worker.server_stats();
}

}  // namespace dtrain::ps::testing
