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

}  // namespace dtrain::perf
