// Stragglers: the expected maximum of p normals against tabulated values, the robust variation
// of timings (alone and in lockstep across ranks), and the wait the step model adds for the slowest worker.
#include "perfmodel/straggler.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numbers>
#include <random>

#include "core/error.h"
#include "perfmodel/step_model.h"
#include "perfmodel/timing_stats.h"
#include "perfmodel_test_util.h"

namespace dtrain::perf {
namespace {

using testing::layer;
using testing::test_profile;

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

// Double buffering: the simulated recurrence of straggler.h against what it must reduce to.
TEST(Straggler, DoubleBufferingSlackHidesMostOfTheWait) {
  EXPECT_EQ(straggler_wait_double_buffered(0.2, 0.2, 1, 0), 0);
  EXPECT_EQ(straggler_wait_double_buffered(0.2, 0, 4, 0), 0);
  const double bsp = straggler_wait(0.2, 0.2, 4);
  const double db = straggler_wait_double_buffered(0.2, 0.2, 4, 0);
  EXPECT_EQ(db, straggler_wait_double_buffered(0.2, 0.2, 4, 0));  // a fixed seed
  // One step of slack: an independent simulation of the same recurrence put it at 0.16x.
  EXPECT_GT(db, 0.08 * bsp);
  EXPECT_LT(db, 0.30 * bsp);
  // More workers wait longer; more variation waits longer.
  EXPECT_GT(straggler_wait_double_buffered(0.2, 0.2, 16, 0), db);
  EXPECT_GT(straggler_wait_double_buffered(0.2, 0.4, 4, 0), db);
  // A tail longer than a step leaves no slack: every other step waits for the slowest worker
  // of the step two back, the two steps in flight half of the synchronous wait each.
  EXPECT_NEAR(straggler_wait_double_buffered(0.2, 0.05, 4, 1.0), straggler_wait(0.2, 0.05, 4) / 2,
              0.05 * straggler_wait(0.2, 0.05, 4));
  // A tail of part of a step leaves part of the slack: between the two.
  const double part = straggler_wait_double_buffered(0.2, 0.2, 4, 0.15);
  EXPECT_GT(part, db);
  EXPECT_LT(part, bsp);
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

TEST(Straggler, LockstepVariationKeepsTheRanksOwnPartAndCancelsWhatSlowedEveryRank) {
  std::mt19937 rng(11);
  std::normal_distribution<double> own(0, 0.004);           // 4% of a 0.1 s step, each rank's own
  std::uniform_real_distribution<double> machine(0, 0.06);  // up to +60%, every rank alike
  for (const int p : {2, 4}) {
    std::vector<std::vector<double>> t(static_cast<std::size_t>(p), std::vector<double>(4000));
    std::vector<std::vector<double>> alike = t;
    for (std::size_t k = 0; k < 4000; ++k) {
      const double common = machine(rng);
      for (std::size_t r = 0; r < t.size(); ++r) {
        t[r][k] = 0.1 + common + own(rng);
        alike[r][k] = 0.1 + common;
      }
    }
    const double median_step = 0.13;  // the uniform term's median
    EXPECT_NEAR(lockstep_variation(t), 0.004 / median_step, 0.003) << p << " ranks";
    EXPECT_NEAR(lockstep_variation(alike), 0, 1e-12) << p << " ranks";
    // The unsynchronised estimate sees the machine's swings as the ranks' own.
    EXPECT_GT(robust_variation(t[0]), 4 * lockstep_variation(t)) << p << " ranks";
  }
  // A rank slower every step makes the others wait: its offset counts.
  const std::vector<std::vector<double>> offset{{0.1, 0.1, 0.1, 0.1}, {0.12, 0.12, 0.12, 0.12}};
  EXPECT_GT(lockstep_variation(offset), 0.05);
  EXPECT_THROW(lockstep_variation({{0.1, 0.1, 0.1, 0.1}}), InputError);
  EXPECT_THROW(lockstep_variation({{0.1, 0.1, 0.1}, {0.1, 0.1, 0.1}}), InputError);
  EXPECT_THROW(lockstep_variation({{0.1, 0.1, 0.1, 0.1}, {0.1, 0.1, 0.1}}), InputError);
}

TEST(Straggler, LockstepVariationOfTwoRanksGivesBackTheirMeanWait) {
  // Rank 1 now and then slow for a stretch of steps, as one vCPU of a shared machine is: far from
  // normal, yet at p = 2 the wait the step model charges, variation x E[M_2] x median step, is
  // the mean of max - mean over the steps exactly.
  std::mt19937 rng(5);
  std::normal_distribution<double> noise(0, 0.002);
  std::vector<std::vector<double>> t(2, std::vector<double>(96));
  for (std::size_t k = 0; k < 96; ++k) {
    const bool slow = (k / 12) % 4 == 1;
    t[0][k] = 0.06 + noise(rng);
    t[1][k] = (slow ? 0.085 : 0.06) + noise(rng);
  }
  double wait = 0;
  for (std::size_t k = 0; k < 96; ++k) wait += (std::max(t[0][k], t[1][k]) - (t[0][k] + t[1][k]) / 2) / 96;
  std::vector<double> all = t[0];
  all.insert(all.end(), t[1].begin(), t[1].end());
  std::sort(all.begin(), all.end());
  const double median_step = (all[95] + all[96]) / 2;
  EXPECT_NEAR(lockstep_variation(t) * expected_max_of_normals(2) * median_step, wait, 1e-9);
  EXPECT_GT(wait / median_step, 0.05);
  // A rank stalled for a second in one step: each of the step's two deviations counts at most
  // one median step m, which adds at most 2 m / 192 x sqrt(pi / 2) x sqrt(2) / m = sqrt(pi) / 96.
  std::vector<std::vector<double>> stalled = t;
  stalled[1][40] = 1.0;
  const double added = lockstep_variation(stalled) - lockstep_variation(t);
  EXPECT_GT(added, 0);
  EXPECT_LE(added, std::sqrt(std::numbers::pi) / 96 + 1e-12);
}

TEST(Straggler, ExpectedSlowestOfEmpiricalDrawsCountsEveryOrderStatistic) {
  // One draw: the mean. Two draws from {1, 2}: the maximum is 1 only when both are 1 (1/4).
  EXPECT_DOUBLE_EQ(expected_slowest({3.0, 1.0, 2.0}, 1), 2.0);
  EXPECT_DOUBLE_EQ(expected_slowest({2.0, 1.0}, 2), 1.75);
  // Against brute force over every ordered triple of draws from a bimodal sample (a CPU to
  // itself or half of one, as ranks that take turns see their steps).
  const std::vector<double> t{2.3, 2.4, 6.2, 6.3, 6.4, 6.6, 9.0};
  double sum = 0;
  for (double a : t) {
    for (double b : t) {
      for (double c : t) sum += std::max({a, b, c});
    }
  }
  EXPECT_NEAR(expected_slowest(t, 3), sum / std::pow(7.0, 3), 1e-12);
  // It grows with the draws toward the largest timing.
  EXPECT_LT(expected_slowest(t, 4), expected_slowest(t, 16));
  EXPECT_LT(expected_slowest(t, 16), 9.0);
  EXPECT_THROW(expected_slowest({}, 2), InputError);
  EXPECT_THROW(expected_slowest({1.0}, 0), InputError);
}

TEST(TimingStats, MeanWithoutStallsLeavesOutCallsFarAboveTheMedian) {
  // 512 KiB over the 1 Gbit/s link: 4.4 ms but for one stalled call
  EXPECT_DOUBLE_EQ(mean_without_stalls({4.4, 66.0, 4.4, 4.4, 4.6}, 3), (4.4 * 3 + 4.6) / 4);
  EXPECT_DOUBLE_EQ(mean_without_stalls({29, 27, 16}, 3), 24);  // spread within 3x: every call counts
  EXPECT_DOUBLE_EQ(mean_without_stalls({1, 100}, 3), 50.5);    // two calls: no median to stand out from
  EXPECT_DOUBLE_EQ(mean_without_stalls({}, 3), 0);
  EXPECT_DOUBLE_EQ(mean_without_stalls({2, 7}, 0.5), 2);  // a factor below 1 counts as 1
}

Workload deep_net() {
  std::vector<LayerSummary> layers;
  layers.reserve(8);
  for (int i = 0; i < 8; ++i) layers.push_back(layer(fmt::format("c{}", i), "conv2d", 100000, 2e8, 1 << 16));
  return workload_from_layers(layers);
}

// The test profile with a given step variation.
Profile varied_profile(double variation) {
  Profile p = test_profile(4);
  p.device.step_variation = Quantity{variation, 0, 0, "test"};
  return p;
}

TEST(Straggler, SynchronousStepWaitsForTheSlowestWorker) {
  const Profile varied = varied_profile(0.02);
  const Workload w = deep_net();
  RunConfig c;
  c.batch_per_worker = 32;
  for (int workers : {1, 2, 8, 64}) {
    c.workers = workers;
    const StepPrediction alike = predict_step(w, test_profile(4), c);
    const StepPrediction s = predict_step(w, varied, c);
    const double wait = straggler_wait(s.compute, 0.02, workers);
    EXPECT_DOUBLE_EQ(s.straggler, wait) << workers;
    EXPECT_EQ(alike.straggler, 0) << workers;
    EXPECT_NEAR(s.step, alike.step + wait, 1e-12) << workers;
    EXPECT_NEAR(s.phases.comm, alike.phases.comm + wait, 1e-12) << workers;  // measured as the wait for buckets
    EXPECT_NEAR(s.exposed_comm(), alike.phases.comm, 1e-12) << workers;
    EXPECT_NEAR(s.phases.total(), s.step, 1e-9 * s.step) << workers;
  }
  c.workers = 8;
  const StepPrediction s8 = predict_step(w, varied, c);
  c.workers = 64;
  EXPECT_GT(predict_step(w, varied, c).straggler, s8.straggler);
  bool shown = false;
  for (const TimelineEvent& e : s8.timeline) shown = shown || (e.category == "straggler" && e.duration > 0);
  EXPECT_TRUE(shown);
}

TEST(Straggler, DoubleBufferedStepWaitsLessForTheSlowestWorker) {
  const Profile varied = varied_profile(0.1);
  const Workload w = deep_net();
  RunConfig c;
  c.batch_per_worker = 32;
  c.workers = 8;
  const StepPrediction bsp = predict_step(w, varied, c);
  c.double_buffering = true;
  const StepPrediction db = predict_step(w, varied, c);
  EXPECT_GT(db.straggler, 0);
  EXPECT_LT(db.straggler, 0.5 * bsp.straggler);
  EXPECT_NEAR(db.phases.total(), db.step, 1e-9 * db.step);
}

TEST(Straggler, RanksTimeSharingCpusTakeTurnsAndWaitForNoStraggler) {
  // 4 ranks per host on 2 CPUs: the variation is the time slicing, and a rank that waits gives its
  // CPU to the one it shares it with, so neither the synchronous nor the double-buffered step
  // charges a wait; with a CPU per rank both do.
  Profile shared = varied_profile(0.1);
  shared.node.cores = Quantity{2, 0, 0, "test"};
  const Workload w = deep_net();
  RunConfig c;
  c.batch_per_worker = 32;
  c.workers = 8;
  for (bool db : {false, true}) {
    c.double_buffering = db;
    const StepPrediction s = predict_step(w, shared, c);
    EXPECT_EQ(s.straggler, 0) << db;
    EXPECT_NEAR(s.step, predict_step(w, test_profile(4), c).step, 1e-12) << "as with no variation " << db;
  }
  shared.node.cores = Quantity{4, 0, 0, "test"};
  c.double_buffering = false;
  const StepPrediction own = predict_step(w, shared, c);
  EXPECT_DOUBLE_EQ(own.straggler, straggler_wait(own.compute, 0.1, 8));
  c.double_buffering = true;
  const StepPrediction own_db = predict_step(w, shared, c);
  EXPECT_GT(own_db.straggler, 0);
  EXPECT_LT(own_db.straggler, 0.5 * own.straggler);
  c.exchange = Exchange::kParameterServer;
  c.double_buffering = false;
  EXPECT_GT(predict_step(w, shared, c).straggler, 0);
  shared.node.cores = Quantity{2, 0, 0, "test"};
  EXPECT_EQ(predict_step(w, shared, c).straggler, 0) << "the parameter server's workers take turns too";
}

TEST(Straggler, RanksTakingTurnsPayTheCalibratedTurnTakingFractionOfTheirCompute) {
  // The turns' measured cost (profile.h: turn_taking) stands where the straggler wait would: the
  // same fraction of compute whatever the variation, synchronous, double-buffered or BSP.
  Profile shared = varied_profile(0.3);
  shared.node.cores = Quantity{2, 0, 0, "test"};
  shared.node.turn_taking = Quantity{0.07, 0, 0, "test"};
  const Workload w = deep_net();
  RunConfig c;
  c.batch_per_worker = 32;
  c.workers = 4;
  for (bool db : {false, true}) {
    c.double_buffering = db;
    const StepPrediction s = predict_step(w, shared, c);
    EXPECT_TRUE(s.turns) << db;
    EXPECT_DOUBLE_EQ(s.straggler, 0.07 * s.compute) << db;
    EXPECT_NEAR(s.step, predict_step(w, test_profile(4), c).step + s.straggler, 1e-12) << db;
    EXPECT_NEAR(s.phases.total(), s.step, 1e-9 * s.step) << db;
    bool named = false;
    for (const TimelineEvent& e : s.timeline) named |= e.name == std::string("ranks taking turns on shared CPUs");
    EXPECT_TRUE(named) << db;
  }
  c.double_buffering = false;
  // shm's flag barriers have their own measured turns; without them, the messages' stand in.
  c.algorithm = comm::Algorithm::kShm;
  EXPECT_DOUBLE_EQ(predict_step(w, shared, c).straggler, 0.07 * predict_step(w, shared, c).compute);
  shared.node.turn_taking_shm = Quantity{0.02, 0, 0, "test"};
  const StepPrediction shm = predict_step(w, shared, c);
  EXPECT_DOUBLE_EQ(shm.straggler, 0.02 * shm.compute);
  c.algorithm = comm::Algorithm::kRing;
  EXPECT_DOUBLE_EQ(predict_step(w, shared, c).straggler, 0.07 * predict_step(w, shared, c).compute);
  c.exchange = Exchange::kParameterServer;
  const StepPrediction ps = predict_step(w, shared, c);
  EXPECT_DOUBLE_EQ(ps.straggler, 0.07 * ps.compute);
  c.sync = Sync::kAsp;
  EXPECT_EQ(predict_step(w, shared, c).straggler, 0) << "asynchronous workers never wait for each other";
  // With a CPU per rank the field is not used: the straggler wait of the variation is.
  c.sync = Sync::kBsp;
  c.exchange = Exchange::kAllreduce;
  shared.node.cores = Quantity{4, 0, 0, "test"};
  const StepPrediction own = predict_step(w, shared, c);
  EXPECT_FALSE(own.turns);
  EXPECT_DOUBLE_EQ(own.straggler, straggler_wait(own.compute, 0.3, 4));
}

TEST(Straggler, ParameterServerWaitsUnderBspOnly) {
  Profile varied = test_profile(1);
  varied.device.step_variation = Quantity{0.05, 0, 0, "test"};
  RunConfig c;
  c.workers = 16;
  c.exchange = Exchange::kParameterServer;
  const Workload w = deep_net();
  const StepPrediction bsp = predict_step(w, varied, c);
  EXPECT_DOUBLE_EQ(bsp.straggler, straggler_wait(bsp.compute, 0.05, 16));
  EXPECT_NEAR(bsp.step, predict_step(w, test_profile(1), c).step + bsp.straggler, 1e-12);
  EXPECT_NEAR(bsp.phases.total(), bsp.step, 1e-9 * bsp.step);
  for (Sync sync : {Sync::kAsp, Sync::kSsp}) {
    c.sync = sync;
    const StepPrediction s = predict_step(w, varied, c);
    EXPECT_EQ(s.straggler, 0) << sync_name(sync);
    EXPECT_DOUBLE_EQ(s.step, predict_step(w, test_profile(1), c).step) << sync_name(sync);
  }
}

}  // namespace
}  // namespace dtrain::perf
