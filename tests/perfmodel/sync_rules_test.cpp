// The synchronisation rules' rates under stragglers against their closed forms and against the
// event simulation of ../shared/research/ps.md (section 8.2).
#include "perfmodel/sync_rules.h"

#include <gtest/gtest.h>

#include "core/error.h"

namespace dtrain::perf {
namespace {

WorkerSpeeds persistent(int workers, double factor) {
  WorkerSpeeds s;
  s.workers = workers;
  s.straggler = WorkerSpeeds::Straggler::kPersistent;
  s.factor = factor;
  s.slow_worker = workers - 1;
  s.jitter = 0;
  return s;
}

TEST(SyncRules, EqualWorkersRunAtTheSameRateUnderEveryRule) {
  WorkerSpeeds s;
  s.workers = 4;
  s.jitter = 0;
  for (int staleness : {0, 1, 3, kUnboundedStaleness}) EXPECT_DOUBLE_EQ(sync_rule_rate(s, staleness, 200), 4.0);
}

TEST(SyncRules, PersistentStragglerGivesTheClosedForms) {
  for (int w : {2, 3, 4, 8}) {
    const WorkerSpeeds s = persistent(w, 2.0);
    // BSP at the slow worker's pace, W / F gradients per unit time.
    EXPECT_NEAR(sync_rule_rate(s, 0), w / 2.0, 1e-3 * w) << w;
    // ASP / BSP = F - (F - 1) / W: 1.5, 1.67, 1.75, 1.875.
    EXPECT_NEAR(speedup_over_bsp(s, kUnboundedStaleness), asp_over_bsp_persistent(w, 2.0), 0.01) << w;
    // SSP gains only S clocks over the whole run: the same rate as BSP.
    EXPECT_NEAR(speedup_over_bsp(s, 1), 1.0, 0.01) << w;
    EXPECT_NEAR(speedup_over_bsp(s, 3), 1.0, 0.01) << w;
  }
  EXPECT_DOUBLE_EQ(asp_over_bsp_persistent(3, 2.0), 2.0 - 1.0 / 3);
  EXPECT_DOUBLE_EQ(asp_over_bsp_persistent(4, 4.0), 4.0 - 3.0 / 4);
}

TEST(SyncRules, TransientStragglersPutSspBetweenBspAndAsp) {
  WorkerSpeeds s;
  s.workers = 3;
  s.straggler = WorkerSpeeds::Straggler::kRandom;
  s.factor = 2;
  s.probability = 1.0 / 3;
  s.jitter = 0.1;
  const double ssp1 = speedup_over_bsp(s, 1), ssp3 = speedup_over_bsp(s, 3);
  const double asp = speedup_over_bsp(s, kUnboundedStaleness);
  EXPECT_LT(1.0, ssp1);
  EXPECT_LT(ssp1, ssp3);
  EXPECT_LE(ssp3, asp);
  // The research simulation (jitter U(0.9, 1.1), its own draws): SSP1 1.21, SSP3 1.27, ASP 1.30.
  EXPECT_NEAR(ssp1, 1.21, 0.05);
  EXPECT_NEAR(ssp3, 1.27, 0.05);
  EXPECT_NEAR(asp, 1.30, 0.05);
  // A bound as long as the run is no bound; 0 is BSP.
  EXPECT_DOUBLE_EQ(sync_rule_rate(s, 100000, 500), sync_rule_rate(s, kUnboundedStaleness, 500));
  EXPECT_DOUBLE_EQ(speedup_over_bsp(s, 0, 500), 1.0);
}

TEST(SyncRules, AnotherSeedMovesTheRatiosOnlyByItsSamplingNoise) {
  WorkerSpeeds s;
  s.workers = 4;
  s.straggler = WorkerSpeeds::Straggler::kRandom;
  s.factor = 2;
  s.probability = 0.25;
  const double a = speedup_over_bsp(s, 3);
  s.seed = 99;
  EXPECT_NEAR(speedup_over_bsp(s, 3), a, 0.03);
  EXPECT_NEAR(a, 1.34, 0.06);  // the research table's W = 4, p = 1/W row
}

TEST(SyncRules, BadSettingsAreInputErrors) {
  WorkerSpeeds s;
  s.workers = 0;
  EXPECT_THROW(sync_rule_rate(s, 0), InputError);
  s.workers = 2;
  EXPECT_THROW(sync_rule_rate(s, 0, 0), InputError);
  s.factor = 0.5;
  EXPECT_THROW(sync_rule_rate(s, 0), InputError);
  s.factor = 2;
  s.straggler = WorkerSpeeds::Straggler::kPersistent;
  s.slow_worker = 2;
  EXPECT_THROW(sync_rule_rate(s, 0), InputError);
  s.straggler = WorkerSpeeds::Straggler::kRandom;
  s.probability = 1.5;
  EXPECT_THROW(sync_rule_rate(s, 0), InputError);
  EXPECT_THROW(asp_over_bsp_persistent(0, 2), InputError);
}

}  // namespace
}  // namespace dtrain::perf
