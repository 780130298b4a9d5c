// Order statistics of repeated timings, as the calibration and the straggler term use them.
#pragma once

#include <vector>

namespace dtrain::perf {

// The f-quantile (0 <= f <= 1) of sorted, non-empty values, interpolating linearly between
// order statistics (the usual "type 7" definition).
double quantile(const std::vector<double>& sorted, double f);

// The median (the mean of the two middle values for an even count); 0 for no values.
double median(std::vector<double> values);

// The mean of the values no larger than `factor` x their median (factor >= 1, so the median's
// own values always count): the mean of repeated timings without their stalls. 0 for no values.
double mean_without_stalls(const std::vector<double>& values, double factor);

}  // namespace dtrain::perf
