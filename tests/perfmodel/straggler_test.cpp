// Stragglers: the expected maximum of p normals against tabulated values, the robust variation
// of timings.
#include "perfmodel/straggler.h"

#include <gtest/gtest.h>

#include <cmath>
#include <numbers>
#include <random>

#include "core/error.h"

namespace dtrain::perf {
namespace {

TEST(Straggler, ExpectedMaximumOfNormalsMatchesKnownValues) {
  EXPECT_EQ(expected_max_of_normals(1), 0);
  EXPECT_NEAR(expected_max_of_normals(2), 1 / std::sqrt(std::numbers::pi), 1e-7);        // 0.5642
  EXPECT_NEAR(expected_max_of_normals(3), 3 / (2 * std::sqrt(std::numbers::pi)), 1e-7);  // 0.8463
  EXPECT_NEAR(expected_max_of_normals(10), 1.538753, 1e-5);
  EXPECT_NEAR(expected_max_of_normals(100), 2.507594, 1e-5);
  EXPECT_NEAR(expected_max_of_normals(1000), 3.241436, 1e-5);
  EXPECT_THROW(expected_max_of_normals(0), InputError);
}

TEST(Straggler, ExpectedMaximumGrowsWithWorkersBelowTheSqrtTwoLogBound) {
  double previous = 0;
  for (int p = 2; p <= 1 << 20; p = p < 64 ? p + 1 : 2 * p) {
    const double m = expected_max_of_normals(p);
    EXPECT_GT(m, previous) << p;
    EXPECT_LT(m, std::sqrt(2 * std::log(p))) << p;  // E[max] <= sqrt(2 ln p)
    previous = m;
  }
}

TEST(Straggler, WaitIsVariationTimesComputeTimesTheExpectedMaximum) {
  EXPECT_EQ(straggler_wait(0.2, 0.02, 1), 0);
  EXPECT_EQ(straggler_wait(0.2, 0, 256), 0);
  EXPECT_DOUBLE_EQ(straggler_wait(0.2, 0.02, 8), 0.2 * 0.02 * expected_max_of_normals(8));
}

TEST(Straggler, RobustVariationOfNormalTimingsIgnoresOutliers) {
  std::mt19937 rng(7);
  std::normal_distribution<double> step(0.1, 0.003);  // 3% variation
  std::vector<double> t(2000);
  for (double& x : t) x = step(rng);
  EXPECT_NEAR(robust_variation(t), 0.03, 0.003);
  // A few preempted steps barely move it (the standard deviation would triple).
  for (int i = 0; i < 20; ++i) t[static_cast<std::size_t>(i)] = 1.0;
  EXPECT_NEAR(robust_variation(t), 0.03, 0.004);
  EXPECT_EQ(robust_variation({0.1, 0.1, 0.1, 0.1}), 0);
  EXPECT_THROW(robust_variation({0.1, 0.2, 0.3}), InputError);
}

}  // namespace
}  // namespace dtrain::perf
