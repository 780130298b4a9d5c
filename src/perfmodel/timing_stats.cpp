#include "perfmodel/timing_stats.h"

#include <algorithm>

namespace dtrain::perf {

double quantile(const std::vector<double>& sorted, double f) {
  const double at = f * static_cast<double>(sorted.size() - 1);
  const auto i = static_cast<std::size_t>(at);
  if (i + 1 >= sorted.size()) return sorted.back();
  return sorted[i] + (at - static_cast<double>(i)) * (sorted[i + 1] - sorted[i]);
}

double median(std::vector<double> values) {
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end());
  return quantile(values, 0.5);
}

double mean_without_stalls(const std::vector<double>& values, double factor) {
  const double limit = std::max(1.0, factor) * median(values);
  double sum = 0;
  int kept = 0;
  for (double v : values) {
    if (v <= limit) {
      sum += v;
      ++kept;
    }
  }
  return kept > 0 ? sum / kept : 0;
}

}  // namespace dtrain::perf
