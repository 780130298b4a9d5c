#include "core/core_round_trip.h"

#include <gtest/gtest.h>
#include <sched.h>

#include <algorithm>
#include <chrono>

namespace dtrain {
namespace {

using std::chrono::milliseconds;

TEST(CoreRoundTrip, AllowedCpusAreAscendingAndIncludeTheCurrentOne) {
  const std::vector<int> cpus = allowed_cpus();
  ASSERT_FALSE(cpus.empty());
  for (std::size_t i = 1; i < cpus.size(); ++i) EXPECT_LT(cpus[i - 1], cpus[i]);
  const int here = sched_getcpu();
  EXPECT_NE(std::find(cpus.begin(), cpus.end(), here), cpus.end());
}

TEST(CoreRoundTrip, MeasuresBetweenTwoCoresWithinTheBudget) {
  if (allowed_cpus().size() < 2) GTEST_SKIP() << "one CPU: no pair of cores to measure";
  const auto start = std::chrono::steady_clock::now();
  const std::optional<double> rt = core_round_trip_seconds(milliseconds(5));
  const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  // Both threads may be kept off their CPUs by a loaded machine; then there is no measurement,
  // but never a wait past ten budgets (plus thread start-up).
  EXPECT_LT(took, 1.0);
  if (!rt) GTEST_SKIP() << "the two threads never ran at once (busy machine)";
  // A cache line crosses between cores in tens to hundreds of nanoseconds on any machine; a round
  // trip of 20 us would mean the threads took turns on one core.
  EXPECT_GT(*rt, 1e-9);
  EXPECT_LT(*rt, 20e-6);
}

TEST(CoreRoundTrip, GivesUpOnOneCpuInsteadOfSpinningForever) {
  const int cpu = allowed_cpus().front();
  const auto start = std::chrono::steady_clock::now();
  const std::optional<double> rt = core_round_trip_seconds(cpu, cpu, milliseconds(2));
  const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_LT(took, 1.0);
  // Sharing one CPU, each turn waits for the scheduler to switch threads: that is no
  // measurement of two cores.
  EXPECT_FALSE(rt.has_value());
}

TEST(CoreRoundTrip, CpuThatDoesNotExistGivesNothing) {
  EXPECT_FALSE(core_round_trip_seconds(100000, allowed_cpus().front(), milliseconds(1)));
  EXPECT_FALSE(core_round_trip_seconds(-1, 0, milliseconds(1)));
}

TEST(CoreRoundTrip, StatesDifferPastTheFactor) {
  EXPECT_FALSE(different_core_state(60e-9, 80e-9));
  EXPECT_TRUE(different_core_state(60e-9, 340e-9));
  EXPECT_TRUE(different_core_state(340e-9, 60e-9));
  EXPECT_FALSE(different_core_state(60e-9, 100e-9, 2.0));
  EXPECT_TRUE(different_core_state(60e-9, 100e-9, 1.5));
}

}  // namespace
}  // namespace dtrain
