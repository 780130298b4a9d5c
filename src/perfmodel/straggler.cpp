#include "perfmodel/straggler.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <numbers>
#include <random>
#include <utility>
#include <vector>

#include "core/error.h"
#include "perfmodel/timing_stats.h"

namespace dtrain::perf {
namespace {

// Past x = 10 both terms of the integrand are below p * 1e-23.
constexpr double kUpper = 10, kStep = 0.005;
// Steps simulated for the double-buffered wait (after kStragglerBurnIn to leave the start): the
// mean period's sampling error is about variation x mu / sqrt(steps), 0.3% of a step at 0.2 over
// kStragglerSteps. Past 100 workers the steps shrink so the draws stay at kStragglerDraws (the
// model runs once per configuration compared: 1024 workers took 65 ms a call at 4000 steps), at
// least kStragglerMinSteps (1% of a step at 0.2).
constexpr int kStragglerSteps = 4000, kStragglerMinSteps = 400, kStragglerBurnIn = 200;
constexpr long kStragglerDraws = 400000;
constexpr std::uint64_t kStragglerSeed = 20261124;

// 1 - Phi(x)^p - Phi(-x)^p for x >= 0, without cancellation: Phi(x)^p = exp(p log1p(-Q(x))),
// Q(x) = Phi(-x) = erfc(x / sqrt 2) / 2.
double integrand(double x, double p) {
  const double q = 0.5 * std::erfc(x / std::sqrt(2.0));
  return -std::expm1(p * std::log1p(-q)) - std::pow(q, p);
}

}  // namespace

double expected_max_of_normals(int p) {
  if (p < 1) throw InputError(fmt::format("the expected maximum needs at least one worker, got {}", p));
  if (p == 1) return 0;
  const double n = p;
  const int intervals = static_cast<int>(kUpper / kStep);  // even
  double sum = integrand(0, n) + integrand(kUpper, n);
  for (int i = 1; i < intervals; ++i) sum += (i % 2 == 1 ? 4 : 2) * integrand(i * kStep, n);
  return sum * kStep / 3;
}

double straggler_wait(double compute_seconds, double variation, int workers) {
  if (variation <= 0 || workers <= 1) return 0;
  return variation * compute_seconds * expected_max_of_normals(workers);
}

double straggler_wait_double_buffered(double compute_seconds, double variation, int workers, double tail_seconds) {
  if (variation <= 0 || workers <= 1 || compute_seconds <= 0) return 0;
  const double mu = compute_seconds, tail = std::max(0.0, tail_seconds);
  std::mt19937_64 rng(kStragglerSeed);
  std::normal_distribution<double> draw(mu, variation * mu);
  const auto n = static_cast<std::size_t>(workers);
  // Per worker: start of the current step; the slowest end of the step before (all workers').
  std::vector<double> start(n, 0.0), end(n, 0.0);
  double slowest_before = -tail;  // no allreduce to wait for before the first step
  double at_burn_in = 0;
  const int steps =
      static_cast<int>(std::clamp(kStragglerDraws / workers, long{kStragglerMinSteps}, long{kStragglerSteps}));
  for (int k = 0; k < kStragglerBurnIn + steps; ++k) {
    double slowest = 0;
    for (std::size_t i = 0; i < n; ++i) {
      end[i] = start[i] + std::max(0.0, draw(rng));
      slowest = std::max(slowest, end[i]);
    }
    for (std::size_t i = 0; i < n; ++i) start[i] = std::max(end[i], slowest_before + tail);
    slowest_before = slowest;
    if (k + 1 == kStragglerBurnIn) at_burn_in = start[0];
  }
  const double period = (start[0] - at_burn_in) / steps;
  // Every X at mu: D(k+1) = max(D(k) + mu, D(k-1) + mu + tail), a period of max(mu, (mu + tail) / 2).
  return std::max(0.0, period - std::max(mu, (mu + tail) / 2));
}

double expected_slowest(std::vector<double> seconds, int p) {
  if (seconds.empty()) throw InputError("the expected slowest step needs at least one timing, got none");
  if (p < 1) throw InputError(fmt::format("the expected slowest step needs at least one worker, got {}", p));
  std::sort(seconds.begin(), seconds.end());
  const double n = static_cast<double>(seconds.size());
  double expected = 0, below = 0;  // below: P(max <= x_(i-1)) = ((i-1)/n)^p
  for (std::size_t i = 0; i < seconds.size(); ++i) {
    const double upto = std::pow(static_cast<double>(i + 1) / n, p);
    expected += seconds[i] * (upto - below);
    below = upto;
  }
  return expected;
}

namespace {

// A normal distribution's standard deviation from sorted values, robustly: their interquartile
// range over 1.349 (the IQR of a normal distribution in standard deviations).
double robust_spread(const std::vector<double>& sorted) {
  return (quantile(sorted, 0.75) - quantile(sorted, 0.25)) / 1.349;
}

}  // namespace

double robust_variation(std::vector<double> seconds) {
  if (seconds.size() < 4) {
    throw InputError(fmt::format("the step-time variation needs at least 4 timings, got {}", seconds.size()));
  }
  std::sort(seconds.begin(), seconds.end());
  const double mid = quantile(seconds, 0.5);
  if (mid <= 0) return 0;
  return robust_spread(seconds) / mid;
}

double lockstep_variation(const std::vector<std::vector<double>>& per_rank) {
  const std::size_t p = per_rank.size();
  if (p < 2) throw InputError(fmt::format("the lockstep variation needs at least 2 ranks, got {}", p));
  const std::size_t steps = per_rank[0].size();
  if (steps < 4) throw InputError(fmt::format("the lockstep variation needs at least 4 steps, got {}", steps));
  for (const std::vector<double>& rank : per_rank) {
    if (rank.size() != steps) {
      throw InputError(
          fmt::format("the ranks timed {} and {} lockstep steps; they must time as many", steps, rank.size()));
    }
  }
  std::vector<double> all;
  for (const std::vector<double>& rank : per_rank) all.insert(all.end(), rank.begin(), rank.end());
  const double mid = median(std::move(all));
  if (mid <= 0) return 0;
  double deviations = 0;
  for (std::size_t k = 0; k < steps; ++k) {
    double mean = 0;
    for (const std::vector<double>& rank : per_rank) mean += rank[k] / static_cast<double>(p);
    for (const std::vector<double>& rank : per_rank) deviations += std::min(std::abs(rank[k] - mean), mid);
  }
  const double mean_deviation = deviations / static_cast<double>(p * steps);
  return mean_deviation * std::sqrt(std::numbers::pi / 2) *
         std::sqrt(static_cast<double>(p) / static_cast<double>(p - 1)) / mid;
}

}  // namespace dtrain::perf
