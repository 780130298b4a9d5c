// The synchronisation rules' rates under stragglers against their closed forms and against the
// event simulation of ../shared/research/ps.md (section 8.2).
#include "perfmodel/sync_rules.h"

#include <gtest/gtest.h>

#include "core/error.h"
#include "perfmodel/run_model.h"
#include "perfmodel/step_model.h"
#include "perfmodel_test_util.h"

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

// A compute-bound model on a fast network and fast servers: the rules' steps differ by the
// stragglers alone.
std::vector<LayerSummary> compute_bound() {
  return {testing::layer("fc1", "linear", 1000, 5e9), testing::layer("fc2", "linear", 1000, 5e9)};
}

StepPrediction predicted(Exchange exchange, Sync sync, const WorkerSpeeds& slowdown) {
  RunConfig c;
  c.workers = 3;
  c.batch_per_worker = 8;
  c.exchange = exchange;
  c.sync = sync;
  c.staleness = 3;
  c.slowdown = slowdown;
  return predict_step(compute_bound(), testing::test_profile(1, 1e-9, 1e12), c);
}

TEST(SyncRules, TheStepModelPricesSlowedWorkersPerRule) {
  WorkerSpeeds transient;
  transient.straggler = WorkerSpeeds::Straggler::kRandom;
  transient.factor = 2;
  transient.probability = 1.0 / 3;
  const StepPrediction plain = predicted(Exchange::kParameterServer, Sync::kBsp, WorkerSpeeds{});
  const StepPrediction bsp = predicted(Exchange::kParameterServer, Sync::kBsp, transient);
  const StepPrediction ssp = predicted(Exchange::kParameterServer, Sync::kSsp, transient);
  const StepPrediction asp = predicted(Exchange::kParameterServer, Sync::kAsp, transient);
  ASSERT_GT(plain.compute, 100 * (plain.step - plain.compute - plain.straggler));  // compute-bound
  // The step ratios are the simulation's rate ratios (no jitter: the natural variation is the
  // profile's, here none).
  WorkerSpeeds s = transient;
  s.workers = 3;
  s.jitter = 0;
  EXPECT_NEAR(bsp.step / ssp.step, speedup_over_bsp(s, 3, 2000), 0.01);
  EXPECT_NEAR(bsp.step / asp.step, speedup_over_bsp(s, kUnboundedStaleness, 2000), 0.01);
  EXPECT_GT(bsp.straggler, ssp.straggler);
  EXPECT_GT(ssp.straggler, asp.straggler);
  // The phases still add up to the step.
  EXPECT_NEAR(ssp.phases.total(), ssp.step, 1e-9);
  // One worker persistently 2x slower: allreduce and BSP take twice the compute, ASP runs at
  // (W - 1 + 1/F) / W of the workers' pace.
  WorkerSpeeds one_slow;
  one_slow.straggler = WorkerSpeeds::Straggler::kPersistent;
  one_slow.factor = 2;
  const StepPrediction ring = predicted(Exchange::kAllreduce, Sync::kBsp, one_slow);
  EXPECT_NEAR(ring.straggler, ring.compute, 1e-3 * ring.compute);
  const StepPrediction slow_bsp = predicted(Exchange::kParameterServer, Sync::kBsp, one_slow);
  const StepPrediction slow_asp = predicted(Exchange::kParameterServer, Sync::kAsp, one_slow);
  EXPECT_NEAR(slow_bsp.step / slow_asp.step, asp_over_bsp_persistent(3, 2), 0.01);
}

TEST(SyncRules, TheOneWorkerBaselineIsNotSlowed) {
  RunConfig c;
  c.workers = 3;
  c.batch_per_worker = 8;
  c.exchange = Exchange::kParameterServer;
  c.sync = Sync::kAsp;
  const Workload w = workload_from_layers(compute_bound());
  DatasetInfo data;
  data.name = "synthetic";
  data.train_samples = 2400;
  data.test_samples = 0;
  const Profile p = testing::test_profile(1, 1e-9, 1e12);
  const RunPrediction plain = predict_run(w, data, p, c, 1);
  c.slowdown.straggler = WorkerSpeeds::Straggler::kPersistent;
  c.slowdown.factor = 2;
  const RunPrediction slowed = predict_run(w, data, p, c, 1);
  EXPECT_DOUBLE_EQ(slowed.single_worker_epoch_seconds, plain.single_worker_epoch_seconds);
  EXPECT_LT(slowed.speedup, plain.speedup);
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
  RunConfig c;
  c.staleness = -1;
  EXPECT_THROW(validate(c), InputError);
  c.staleness = 3;
  c.slowdown.straggler = WorkerSpeeds::Straggler::kRandom;
  c.slowdown.factor = 2;
  EXPECT_THROW(validate(c), InputError);  // no probability
}

}  // namespace
}  // namespace dtrain::perf
