#include "perfmodel/parameter_server.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "core/error.h"

namespace dtrain::perf {

const char* sync_name(Sync s) {
  switch (s) {
    case Sync::kBsp:
      return "bsp";
    case Sync::kSsp:
      return "ssp";
    case Sync::kAsp:
      return "asp";
  }
  return "?";
}

Sync parse_sync(const std::string& name) {
  for (Sync s : {Sync::kBsp, Sync::kSsp, Sync::kAsp}) {
    if (name == sync_name(s)) return s;
  }
  throw InputError(
      fmt::format("unknown --sync '{}'; valid: bsp (synchronous), ssp (bounded staleness), asp "
                  "(asynchronous)",
                  name));
}

ServerTime parameter_server_time(const ServerPlan& plan, std::int64_t params, double compute, const Profile& profile) {
  if (plan.workers < 1) throw InputError(fmt::format("workers must be >= 1, got {}", plan.workers));
  if (plan.servers < 1) throw InputError(fmt::format("--servers must be >= 1, got {}", plan.servers));
  const LinkProfile& link = profile.network ? *profile.network : profile.node.intra_link;
  const double alpha = link.latency.value, beta = 1.0 / link.bandwidth.value;
  const double w = plan.workers, k = plan.servers;
  const double sharing = std::min<double>(profile.node.accelerators, w);
  // Gradients are pushed in the wire type, weights pulled in f32 (ps/protocol.h).
  const double pushed = static_cast<double>(params) * static_cast<double>(dtype_size(plan.dtype));
  const double pulled = static_cast<double>(params) * 4.0;
  const double update_per_gradient = static_cast<double>(params) / k / profile.device.update.value;

  const auto worker_side = [&](double bytes) { return k * alpha + sharing * bytes * beta; };
  const auto server_side = [&](double bytes) { return w * (alpha + bytes / k * beta); };
  ServerTime t;
  const double hidden = std::max(0.0, plan.push_hidden), pull_hidden = std::max(0.0, plan.pull_hidden);
  if (plan.sync == Sync::kBsp) {
    t.push = std::max(worker_side(pushed), server_side(pushed));
    t.pull = std::max(worker_side(pulled), server_side(pulled));
    // ps/server.cpp: the W pushes summed (W - 1 additions of the shard, in f32), then one
    // optimizer pass over the shard with their mean.
    const double shard_f32_bytes = 4.0 * static_cast<double>(params) / k;
    t.server_update = (w - 1) * shard_f32_bytes / profile.device.reduce.value + update_per_gradient;
    t.step = compute + std::max(0.0, t.push - hidden) + t.server_update + std::max(0.0, t.pull - pull_hidden);
  } else {
    t.push = worker_side(pushed);
    t.pull = worker_side(pulled);
    const double worker_period = compute + std::max(0.0, t.push - hidden) + std::max(0.0, t.pull - pull_hidden);
    const double per_update = 2 * alpha + (pushed + pulled) / k * beta + update_per_gradient;
    t.server_update = w * update_per_gradient;
    t.servers_bound = w * per_update > worker_period;
    t.step = std::max(worker_period, w * per_update);
  }
  t.exposed = t.step - compute;
  return t;
}

namespace {

// When each shard's gradients are final, in push order (shard K-1 first), and backward's length.
std::vector<double> shard_ready_times(const std::vector<std::int64_t>& layer_params,
                                      const std::vector<double>& layer_backward, int servers, double& backward) {
  DT_CHECK(layer_params.size() == layer_backward.size(), "{} layers' parameters, {} layers' backward",
           layer_params.size(), layer_backward.size());
  std::int64_t total = 0;
  for (std::int64_t p : layer_params) total += p;
  // done_after[j]: backward seconds until layer j's backward ends (layers run last to first).
  std::vector<double> done_after(layer_backward.size(), 0.0);
  double t = 0;
  for (std::size_t j = layer_backward.size(); j-- > 0;) {
    t += layer_backward[j];
    done_after[j] = t;
  }
  backward = t;
  std::vector<double> ready;
  if (servers <= 1 || total <= 0) return ready;
  for (int k = servers; k-- > 0;) {
    // The layer holding flat parameter floor(total k / K), the shard's first.
    const std::int64_t first = total * k / servers;
    std::int64_t before = 0;
    std::size_t layer = 0;
    while (layer + 1 < layer_params.size() && before + layer_params[layer] <= first) before += layer_params[layer++];
    ready.push_back(done_after[layer]);
  }
  return ready;
}

}  // namespace

double pushes_during_backward(const std::vector<std::int64_t>& layer_params, const std::vector<double>& layer_backward,
                              int servers, double push_seconds) {
  double backward = 0;
  double end = 0;
  for (double ready : shard_ready_times(layer_params, layer_backward, servers, backward)) {
    end = std::max(end, ready) + push_seconds / servers;
  }
  if (end == 0) return 0;
  return std::max(0.0, push_seconds - std::max(0.0, end - backward));
}

double pulls_during_backward(const std::vector<std::int64_t>& layer_params, const std::vector<double>& layer_backward,
                             int servers, double push_seconds, double server_seconds, double pull_seconds) {
  double backward = 0;
  double pushed = 0, pulled = 0;
  for (double ready : shard_ready_times(layer_params, layer_backward, servers, backward)) {
    pushed = std::max(pushed, ready) + push_seconds / servers;
    pulled = std::max(pulled, pushed + server_seconds) + pull_seconds / servers;
  }
  if (pulled == 0) return 0;
  // The tail the step would pay with every pull after the last push's answer, less the chain's.
  return std::max(0.0, std::max(0.0, pushed - backward) + server_seconds + pull_seconds - (pulled - backward));
}

WorkerCompute worker_compute_on_cores(const Profile& profile, int workers, Sync sync, double calibrated) {
  WorkerCompute c{calibrated, calibrated};
  if (!profile.node.cores) return c;
  const double cores = profile.node.cores->value;
  const double calibrated_ranks = std::max(1, profile.node.accelerators);
  const double busy = std::min<double>(calibrated_ranks, workers);
  c.alone = calibrated * std::min(1.0, cores / calibrated_ranks);
  if (busy >= calibrated_ranks) return c;
  c.as_calibrated = false;
  c.shared = c.alone * (sync == Sync::kAsp ? std::max(1.0, busy / cores) : std::ceil(busy / cores));
  return c;
}

}  // namespace dtrain::perf
