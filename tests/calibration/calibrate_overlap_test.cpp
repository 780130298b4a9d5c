// The compute share of calibrate_overlap.h from one rank's times: the rate compute keeps while an
// exchange is in flight, where the communication thread sleeps between exchanges.
#include "calibration/calibrate_overlap.h"

#include <gtest/gtest.h>

#include "core/error.h"

namespace dtrain::perf {
namespace {

// Compute at `share` of its speed while an exchange is in flight (in_flight seconds) and at full
// speed for `idle` seconds between exchanges: the alone time of the work that got done.
double alone_for(double share, double in_flight, double idle) { return share * in_flight + idle; }

TEST(ComputeShareInFlight, RecoversTheRateWhileAnExchangeRuns) {
  for (double share : {0.3, 0.6, 0.9, 1.0}) {
    for (double idle : {0.0, 0.05, 0.2}) {
      const double in_flight = 0.2;
      const double alone = alone_for(share, in_flight, idle);
      EXPECT_NEAR(compute_share_in_flight(in_flight + idle, alone, in_flight), share, 1e-12)
          << "share " << share << ", idle " << idle;
    }
  }
}

TEST(ComputeShareInFlight, TheTimesRatioCountsTheIdleTimeAsOverlap) {
  // Half the time in flight at 60%: the ratio of the times says 80%, the rate in flight is 60%.
  const double in_flight = 0.15, idle = 0.15, alone = alone_for(0.6, in_flight, idle);
  EXPECT_NEAR(alone / (in_flight + idle), 0.8, 1e-12);
  EXPECT_NEAR(compute_share_in_flight(in_flight + idle, alone, in_flight), 0.6, 1e-12);
}

TEST(ComputeShareInFlight, NothingInFlightKeepsEverything) {
  EXPECT_EQ(compute_share_in_flight(0.3, 0.2, 0.0), 1.0);
  EXPECT_EQ(compute_share_in_flight(0.3, 0.3, 0.1), 1.0);  // no time lost
}

TEST(ComputeShareInFlight, FasterThanAloneGivesAShareAboveOne) {
  // Drift between the alone runs and the run beside: left for the caller to clamp.
  EXPECT_GT(compute_share_in_flight(0.28, 0.3, 0.1), 1.0);
}

TEST(ComputeShareInFlight, RejectsImpossibleTimes) {
  EXPECT_THROW(compute_share_in_flight(-0.1, 0.2, 0.0), InputError);
  EXPECT_THROW(compute_share_in_flight(0.3, -0.2, 0.1), InputError);
  EXPECT_THROW(compute_share_in_flight(0.3, 0.2, -0.1), InputError);
  EXPECT_THROW(compute_share_in_flight(0.3, 0.2, 0.4), InputError);
}

}  // namespace
}  // namespace dtrain::perf
