#include "perfmodel/allreduce_time.h"

#include <algorithm>
#include <bit>
#include <set>
#include <vector>

#include "core/error.h"

namespace dtrain::perf {
namespace {

// Every allreduce keeps both directions of a link busy: ring and butterfly steps send and
// receive at once, one-to-all's and the tree's pipelines send chunk k while chunks before it come
// back (comm/algorithms/one_to_all.h, tree.h). So each is priced at the exchange rate; the
// one-way rate is for a broadcast. Gamma is the rate of sums in the wire's format.
comm::AlphaBetaGamma abg(const LinkProfile& link, const DeviceProfile& device, int flows, DType wire) {
  return {link.latency.value, static_cast<double>(flows) / link.bandwidth.value, device.reduce_seconds_per_byte(wire)};
}

AllreduceTime time_on(comm::Algorithm a, int p, std::size_t count, DType dtype, comm::AlphaBetaGamma m,
                      std::size_t chunk, bool over_network = false) {
  AllreduceTime t;
  t.seconds = slowest_rank_seconds(a, p, count, dtype, m, chunk);
  t.latency = slowest_rank_seconds(a, p, count, dtype, {m.alpha, 0, 0}, chunk);
  if (over_network) t.network_transfer = slowest_rank_seconds(a, p, count, dtype, {0, m.beta, 0}, chunk);
  return t;
}

// Every rank's counts, the bytes charged beta being what it pulls (pulled_bytes).
std::vector<comm::CommCost> same_host_costs(const AllreducePlan& plan, int p, std::size_t count) {
  std::vector<comm::CommCost> costs;
  costs.reserve(static_cast<std::size_t>(p));
  for (int r = 0; r < p; ++r) {
    costs.push_back(comm::allreduce_cost(plan.algorithm, p, r, count, plan.dtype, plan.chunk_bytes));
    costs.back().beta_bytes = pulled_bytes(costs.back());
  }
  return costs;
}

// Same-host beta from the exchange ladder (profile.h) at the slowest rank's pulled bytes B. With
// several pairs calibrated side by side, the ranks the algorithm keeps busy are b = sum over ranks
// of B_r / B (every rank for the ring and the butterfly, 2.15-2.5 for one-to-all on 4, whose leaves
// pull n + c each while the root pulls 3n + c); the time per byte is read from the one-pair ladder
// at b = 2, from the all-pairs one at b = 2 * pairs, and linearly between.
double ladder_seconds_per_byte(const ExchangeLadder& ladder, const std::vector<comm::CommCost>& costs,
                               double slope_beta) {
  double moved = 0, total = 0;  // the slowest rank's pulled bytes, and all ranks'
  for (const comm::CommCost& c : costs) {
    moved = std::max(moved, static_cast<double>(c.beta_bytes));
    total += static_cast<double>(c.beta_bytes);
  }
  if (moved <= 0) return slope_beta;
  const double all_pairs = interpolate_points(ladder.points, moved);
  if (ladder.pairs <= 1 || ladder.one_pair.empty()) return all_pairs / moved;
  const double busy = total / moved;
  const double w = std::clamp((busy - 2) / (2.0 * ladder.pairs - 2), 0.0, 1.0);
  return ((1 - w) * interpolate_points(ladder.one_pair, moved) + w * all_pairs) / moved;
}

AllreduceTime same_host_time(const ExchangeLadder& ladder, const AllreducePlan& plan, int p, std::size_t count,
                             comm::AlphaBetaGamma m) {
  const std::vector<comm::CommCost> costs = same_host_costs(plan, p, count);
  m.beta = ladder_seconds_per_byte(ladder, costs, m.beta);
  AllreduceTime t;
  for (const comm::CommCost& c : costs) {
    t.seconds = std::max(t.seconds, comm::predict_seconds(c, m));
    t.latency = std::max(t.latency, comm::predict_seconds(c, {m.alpha, 0, 0}));
  }
  return t;
}

// Measured times at count * dtype bytes; the latency part is the line's intercept at zero bytes.
AllreduceTime measured_time(const MeasuredAllreduce& m, const AllreducePlan& plan, std::size_t count) {
  const double seconds = interpolate_measured(m, static_cast<double>(count * dtype_size(plan.dtype)));
  return {seconds, std::clamp(interpolate_measured(m, 0), 0.0, seconds)};
}

// shm (comm/algorithms/shared_memory.h) sends no messages, so no link prices it: where dtrain
// calibrate timed it for this many workers, its times; otherwise its cost's terms at the host's
// memory rates: each of the two flag barriers a cache-line round trip between cores (the same-host
// link's latency where the profile has none), the bytes read from and written into the peers'
// buffers at the rate a gradient is copied into its bucket (both are copies between buffers that
// other cores touched last), and the additions at the reduce rate.
AllreduceTime shm_time(const AllreducePlan& plan, std::size_t count, const Profile& profile) {
  const int p = plan.workers;
  const int k = std::max(1, profile.node.accelerators);
  if (p > k) {
    throw InputError(
        fmt::format("--allreduce shm needs every worker on one host, but {} workers need {} nodes of {} "
                    "accelerator(s) in the profile '{}'; choose another algorithm (ring, tree, butterfly, onetoall, "
                    "mpi, auto)",
                    p, (p + k - 1) / k, k, profile.name));
  }
  if (const MeasuredAllreduce* m = measured_allreduce_for(plan, profile)) return measured_time(*m, plan, count);
  const DeviceProfile& dev = profile.device;
  const double alpha =
      profile.node.core_round_trip ? profile.node.core_round_trip->value : profile.node.intra_link.latency.value;
  // gradient_copy_seconds() is per f32 element, 4 bytes.
  const comm::AlphaBetaGamma m{alpha, dev.gradient_copy_seconds() / 4, dev.reduce_seconds_per_byte(plan.dtype)};
  return time_on(comm::Algorithm::kShm, p, count, plan.dtype, m, plan.chunk_bytes);
}

}  // namespace

double interpolate_measured(const MeasuredAllreduce& m, double bytes) { return interpolate_points(m.points, bytes); }

double interpolate_points(const std::vector<std::pair<double, double>>& points, double bytes) {
  DT_CHECK(!points.empty(), "no measured points");
  if (points.size() == 1) return points[0].second * bytes / points[0].first;
  std::size_t hi = 1;
  while (hi + 1 < points.size() && points[hi].first < bytes) ++hi;
  const auto [b0, t0] = points[hi - 1];
  const auto [b1, t1] = points[hi];
  const double t = t0 + (t1 - t0) * (bytes - b0) / (b1 - b0);
  return std::max(t, 0.1 * points[0].second);
}

std::uint64_t pulled_bytes(const comm::CommCost& c) {
  if (c.messages_received == 0) return c.beta_bytes;
  return std::min(c.beta_bytes, c.bytes_received + c.bytes_received / c.messages_received);
}

int nic_flows(comm::Algorithm a, int per_node) { return a == comm::Algorithm::kButterfly ? per_node : 1; }

double slowest_rank_seconds(comm::Algorithm a, int p, std::size_t count, DType dtype, const comm::AlphaBetaGamma& m,
                            std::size_t chunk) {
  if (p <= 64) return comm::predict_allreduce_seconds(a, p, count, dtype, m, chunk);
  // Ranks whose counts can differ: the ends and the middle; around count % p (ring blocks one
  // element longer); around the butterfly's fold (2e, e = p - q) and its larger-block boundary in
  // the renumbered ranks (count % q); rank 0's subtree in the tree.
  const int q = static_cast<int>(std::bit_floor(static_cast<unsigned>(p)));
  const int e = p - q;
  const int long_blocks = static_cast<int>(count % static_cast<std::size_t>(p));
  const int long_q = static_cast<int>(count % static_cast<std::size_t>(q));
  const int folded = long_q < e ? 2 * long_q + 1 : long_q + e;
  std::set<int> ranks;
  for (int c : {0, 1, p / 2, p - 1, long_blocks, 2 * e, folded, q / 2, q}) {
    for (int d = -2; d <= 2; ++d) {
      if (c + d >= 0 && c + d < p) ranks.insert(c + d);
    }
  }
  double worst = 0;
  for (int r : ranks)
    worst = std::max(worst, comm::predict_seconds(comm::allreduce_cost(a, p, r, count, dtype, chunk), m));
  return worst;
}

AllreduceTime allreduce_time(const AllreducePlan& plan, std::size_t count, const Profile& profile) {
  const int p = plan.workers;
  DT_CHECK(p >= 1, "workers {}", p);
  if (p == 1 || count == 0) return {};
  if (plan.algorithm == comm::Algorithm::kShm) return shm_time(plan, count, profile);
  const int k = std::max(1, profile.node.accelerators);
  if (const MeasuredAllreduce* m =
          plan.algorithm == comm::Algorithm::kMpi ? measured_allreduce_for(plan, profile) : nullptr) {
    AllreduceTime t = measured_time(*m, plan, count);
    if (p > k) t.network_transfer = t.seconds - t.latency;
    return t;
  }
  const DeviceProfile& dev = profile.device;
  if (p <= k) {
    const comm::AlphaBetaGamma m = abg(profile.node.intra_link, dev, 1, plan.dtype);
    if (const auto& ladder = profile.node.intra_link.exchange_ladder) return same_host_time(*ladder, plan, p, count, m);
    return time_on(plan.algorithm, p, count, plan.dtype, m, plan.chunk_bytes);
  }
  if (!profile.network) {
    throw InputError(
        fmt::format("{} workers need {} nodes of {} accelerator(s), but the profile '{}' has no network; "
                    "add one, e.g. --profile {}+ib-edr",
                    p, (p + k - 1) / k, k, profile.name, profile.name));
  }
  const LinkProfile& net = *profile.network;
  if (!plan.hierarchical) {
    comm::Algorithm a = plan.algorithm;
    if (a == comm::Algorithm::kAuto) a = comm::choose_algorithm(p, count * dtype_size(plan.dtype));
    comm::AlphaBetaGamma m = abg(net, dev, nic_flows(a, k), plan.dtype);
    m.alpha = std::max(m.alpha, profile.node.intra_link.latency.value);
    return time_on(plan.algorithm, p, count, plan.dtype, m, plan.chunk_bytes, true);
  }
  const int nodes = (p + k - 1) / k;
  // Within the node: a ring's reduce-scatter then, after the inter-node step, its all-gather.
  AllreduceTime t = time_on(comm::Algorithm::kRing, k, count, plan.dtype,
                            abg(profile.node.intra_link, dev, 1, plan.dtype), plan.chunk_bytes);
  // Across nodes: each of a node's k ranks allreduces its 1/k share with its peers on the other
  // nodes, the k of them sharing the node's network link.
  const std::size_t share = (count + static_cast<std::size_t>(k) - 1) / static_cast<std::size_t>(k);
  const AllreduceTime across =
      time_on(plan.algorithm, nodes, share, plan.dtype, abg(net, dev, k, plan.dtype), plan.chunk_bytes, true);
  t.seconds += across.seconds;
  t.latency += across.latency;
  t.network_transfer = across.network_transfer;
  return t;
}

const MeasuredAllreduce* measured_allreduce_for(const AllreducePlan& plan, const Profile& profile) {
  const std::optional<MeasuredAllreduce>* m = nullptr;
  if (plan.algorithm == comm::Algorithm::kShm) m = &profile.shm_allreduce;
  if (plan.algorithm == comm::Algorithm::kMpi && !plan.hierarchical) m = &profile.mpi_allreduce;
  return m != nullptr && m->has_value() && (*m)->workers == plan.workers ? &**m : nullptr;
}

bool shm_candidate(const Profile& p, int workers) {
  return workers > 1 && workers <= std::max(1, p.node.accelerators) &&
         measured_allreduce_for({comm::Algorithm::kShm, workers}, p) != nullptr;
}

}  // namespace dtrain::perf
