#include "perfmodel/sync_rules.h"

#include <fmt/format.h>

#include <algorithm>
#include <vector>

#include "core/error.h"
#include "core/random.h"

namespace dtrain::perf {
namespace {

void check(const WorkerSpeeds& s, int clocks) {
  if (s.workers < 1) throw InputError(fmt::format("{} workers: a synchronisation rule needs at least one", s.workers));
  if (clocks < 1) throw InputError(fmt::format("{} clocks: simulate at least one", clocks));
  if (!(s.factor >= 1.0)) throw InputError(fmt::format("straggler factor {} is below 1", s.factor));
  if (!(s.probability >= 0 && s.probability <= 1)) {
    throw InputError(fmt::format("straggler probability {} is not in [0, 1]", s.probability));
  }
  if (s.straggler == WorkerSpeeds::Straggler::kPersistent && (s.slow_worker < 0 || s.slow_worker >= s.workers)) {
    throw InputError(fmt::format("slow worker {} is not one of the {} workers", s.slow_worker, s.workers));
  }
  if (!(s.jitter >= 0 && s.jitter < 1)) throw InputError(fmt::format("jitter {} is not in [0, 1)", s.jitter));
}

// T_i(c) for every worker and clock, drawn once so that every rule sees the same steps.
std::vector<std::vector<double>> step_times(const WorkerSpeeds& s, int clocks) {
  std::vector<std::vector<double>> t(static_cast<std::size_t>(s.workers),
                                     std::vector<double>(static_cast<std::size_t>(clocks), 1.0));
  for (int i = 0; i < s.workers; ++i) {
    Rng rng(rng_key(s.seed, 0x5e5d0c1cULL, static_cast<std::uint64_t>(i)));
    for (int c = 0; c < clocks; ++c) {
      double x = s.jitter > 0 ? rng.uniform(1 - s.jitter, 1 + s.jitter) : 1.0;
      const bool slowed = s.straggler == WorkerSpeeds::Straggler::kPersistent ? i == s.slow_worker
                          : s.straggler == WorkerSpeeds::Straggler::kRandom   ? rng.uniform() < s.probability
                                                                              : false;
      if (slowed) x *= s.factor;
      t[static_cast<std::size_t>(i)][static_cast<std::size_t>(c)] = x;
    }
  }
  return t;
}

}  // namespace

double sync_rule_rate(const WorkerSpeeds& s, int staleness, int clocks) {
  check(s, clocks);
  const auto w = static_cast<std::size_t>(s.workers);
  const auto n = static_cast<std::size_t>(clocks);
  const std::vector<std::vector<double>> t = step_times(s, clocks);
  // finish[i][c] = F_i(c); latest[c] = max_j F_j(c), the moment clock c is complete everywhere.
  std::vector<std::vector<double>> finish(w, std::vector<double>(n, 0.0));
  std::vector<double> latest(n, 0.0);
  for (std::size_t c = 0; c < n; ++c) {
    for (std::size_t i = 0; i < w; ++i) {
      double start = c > 0 ? finish[i][c - 1] : 0.0;
      if (staleness != kUnboundedStaleness) {
        const auto bound = static_cast<std::ptrdiff_t>(c) - staleness - 1;
        if (bound >= 0) start = std::max(start, latest[static_cast<std::size_t>(bound)]);
      }
      finish[i][c] = start + t[i][c];
      latest[c] = std::max(latest[c], finish[i][c]);
    }
  }
  // The rate over the first half of the W x C gradients simulated: until then every worker is
  // still within its C clocks (a worker at most 1 / rate-of-the-rest ahead: with W >= 2 the
  // fastest has done at most C clocks when W x C / 2 gradients are done), whereas counting up to
  // the last gradient would measure only the slowest worker's tail under ASP.
  std::vector<double> all;
  all.reserve(w * n);
  for (const auto& f : finish) all.insert(all.end(), f.begin(), f.end());
  const std::size_t target = std::max<std::size_t>(1, (w * n) / 2);
  std::nth_element(all.begin(), all.begin() + static_cast<std::ptrdiff_t>(target - 1), all.end());
  return static_cast<double>(target) / all[target - 1];
}

double speedup_over_bsp(const WorkerSpeeds& s, int staleness, int clocks) {
  return sync_rule_rate(s, staleness, clocks) / sync_rule_rate(s, 0, clocks);
}

double asp_over_bsp_persistent(int workers, double factor) {
  if (workers < 1 || !(factor >= 1.0)) {
    throw InputError(
        fmt::format("{} workers, factor {}: need at least one worker and a factor of at least 1", workers, factor));
  }
  return factor - (factor - 1.0) / workers;
}

}  // namespace dtrain::perf
