#include "perfmodel/straggler.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "core/error.h"
#include "perfmodel/timing_stats.h"

namespace dtrain::perf {
namespace {

// Past x = 10 both terms of the integrand are below p * 1e-23.
constexpr double kUpper = 10, kStep = 0.005;

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

double robust_variation(std::vector<double> seconds) {
  if (seconds.size() < 4) {
    throw InputError(fmt::format("the step-time variation needs at least 4 timings, got {}", seconds.size()));
  }
  std::sort(seconds.begin(), seconds.end());
  const double mid = quantile(seconds, 0.5);
  if (mid <= 0) return 0;
  return (quantile(seconds, 0.75) - quantile(seconds, 0.25)) / 1.349 / mid;
}

}  // namespace dtrain::perf
