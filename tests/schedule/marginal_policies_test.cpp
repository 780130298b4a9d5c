// The policies that allocate by marginal gain: Optimus's speed fit and its probe runs charged in
// full, and the model-driven allocation, on hand-made prices with hand-computed schedules.
#include <gtest/gtest.h>

#include "schedule/marginal_allocation.h"
#include "schedule/policy.h"
#include "schedule/simulator.h"
#include "schedule/speed_fit.h"
#include "schedule_test_util.h"
#include "support/text.h"

namespace {

using dtrain::schedule::allocate_by_marginal_gain;
using dtrain::schedule::fit_speed_curve;
using dtrain::schedule::make_policy;
using dtrain::schedule::MarginalJob;
using dtrain::schedule::PolicyOptions;
using dtrain::schedule::ScheduleResult;
using dtrain::schedule::simulate;
using dtrain::schedule::SpeedCurve;
using dtrain::schedule::test::hand_queue;
using dtrain::schedule::test::HandQueue;
using dtrain::schedule::test::outcome;
using dtrain::test_support::contains;

TEST(SpeedFit, RecoversTheCurveFromExactPoints) {
  const SpeedCurve truth{400, 20, 5};
  std::vector<std::pair<double, double>> points;
  for (double w : {1.0, 2.0, 3.0, 4.0, 6.0}) points.emplace_back(w, truth.at(w));
  const SpeedCurve fit = fit_speed_curve(points);
  EXPECT_NEAR(fit.a, 400, 1e-6);
  EXPECT_NEAR(fit.b, 20, 1e-6);
  EXPECT_NEAR(fit.c, 5, 1e-6);
  // One rank count: a alone through it. A curve that would need c < 0 is fitted with c = 0.
  const SpeedCurve one = fit_speed_curve({{2, 50}});
  EXPECT_NEAR(one.a, 100, 1e-9);
  EXPECT_EQ(one.b, 0);
  EXPECT_EQ(one.c, 0);
  const SpeedCurve bent = fit_speed_curve({{1, 100}, {2, 40}, {4, 10}});  // faster than linear
  EXPECT_GE(bent.c, 0);
  EXPECT_GE(bent.b, 0);
  EXPECT_GT(bent.a, 0);
}

// T(w) = 400/w + 20 + 5w at 1..4 ranks: 425, 230, 168.33, 140.
std::vector<double> curve_seconds() {
  const SpeedCurve c{400, 20, 5};
  return {c.at(1), c.at(2), c.at(3), c.at(4)};
}

TEST(Optimus, ProbeRunsAreChargedThenTheFittedJobRunsAtItsBest) {
  // One job on 4 ranks, probes of 10 s at 1, 2, 3 and 4 ranks, preemption 3 s:
  //   0-10 at 1 rank; 10-13 restart, 13-23 at 2; 23-26, 26-36 at 3; 36-39, 39-49 at 4;
  //   at 49 the fit says 4 ranks (its last probe's): no restart, the rest of the work at 140 s.
  const HandQueue q = hand_queue({{"J", 0, 1, curve_seconds(), 3}});
  PolicyOptions o;
  o.probe_seconds = 10;
  auto optimus = make_policy("optimus", o);
  const ScheduleResult r = simulate(q.jobs, q.prices, 4, *optimus, {0});
  const double done = 10 / 425.0 + 10 / 230.0 + 10 / curve_seconds()[2] + 10 / 140.0;
  EXPECT_NEAR(outcome(q, r, "J").end, 49 + (1 - done) * 140, 1e-6);
  EXPECT_EQ(r.preemptions, 3);
  EXPECT_NEAR(r.probe_rank_seconds, 1 * 10 + 2 * 13 + 3 * 13 + 4 * 13, 1e-6);
  EXPECT_NEAR(r.overhead_rank_seconds, (2 + 3 + 4) * 3, 1e-6);
  const auto& segments = outcome(q, r, "J").segments;
  ASSERT_EQ(segments.size(), 5u);
  EXPECT_TRUE(segments[3].probe);
  EXPECT_FALSE(segments[4].probe);
  EXPECT_EQ(segments[4].ranks, 4);
  EXPECT_NEAR(segments[4].start, 49, 1e-9);
  EXPECT_TRUE(contains(r.actions[1].reason, "probe run 2 of 4 at 2 ranks")) << r.actions[1].reason;
  // The model allocates 4 ranks at once: the whole work in 140 s.
  auto model = make_policy("model", {});
  const ScheduleResult m = simulate(q.jobs, q.prices, 4, *model, {0});
  EXPECT_DOUBLE_EQ(outcome(q, m, "J").end, 140);
  EXPECT_EQ(m.preemptions, 0);
}

TEST(Optimus, FitsFromItsProbesAndAllocatesByTheFittedCurve) {
  // After its probes a job is allocated by the curve it fitted: a job whose time grows past 2
  // ranks (T = 100/w + 1 + 30w: 131, 111, 124.3) ends its probes at 3 ranks and goes back to 2.
  const SpeedCurve c{100, 1, 30};
  const HandQueue q = hand_queue({{"J", 0, 1, {c.at(1), c.at(2), c.at(3)}, 0}});
  PolicyOptions o;
  o.probe_seconds = 5;
  auto optimus = make_policy("optimus", o);
  const ScheduleResult r = simulate(q.jobs, q.prices, 3, *optimus, {0});
  ASSERT_EQ(r.actions.size(), 4u);
  EXPECT_EQ(r.actions[3].ranks, 2);
  EXPECT_NEAR(r.actions[3].time, 15, 1e-9);
  EXPECT_TRUE(contains(r.actions[3].reason, "fitted T(w) = 100/w + 1 + 30 w")) << r.actions[3].reason;
}

TEST(MarginalGain, EachRankGoesWhereItSavesMost) {
  // 4 ranks, A: 100, 50, 34, 26 s at 1-4 ranks; B: 40, 22, 16, 14 s. Both get 1; the third rank
  // saves A 50 s and B 18 s: A; the fourth saves A 16 s and B 18 s: B.
  std::vector<MarginalJob> jobs(2);
  jobs[0] = {"A", 1, 4, 0, 0, {100, 50, 34, 26}};
  jobs[1] = {"B", 1, 4, 0, 0, {40, 22, 16, 14}};
  const auto d = allocate_by_marginal_gain(jobs, 4);
  EXPECT_EQ(d.ranks, (std::vector<int>{2, 2}));
  EXPECT_TRUE(contains(d.reasons[0], "one more would save 16.0 s, the last rank saved 18.0 s for job B"))
      << d.reasons[0];
  // Only 1 rank: the shorter job (B) is admitted, A waits.
  const auto one = allocate_by_marginal_gain(jobs, 1);
  EXPECT_EQ(one.ranks, (std::vector<int>{0, 1}));
  EXPECT_TRUE(contains(one.reasons[0], "waits: needs 1 rank, 0 free after the 1 jobs with less remaining time"))
      << one.reasons[0];
}

TEST(MarginalGain, ARunningJobCountsItsPreemptionCost) {
  // A runs on 2 ranks with 28 s left (19.04 at 3, 14.56 at 4), 2 ranks free. Growing to 4 saves
  // 13.44 s: worth a 5 s restart (8.44 s net), not a 20 s one.
  std::vector<MarginalJob> jobs(1);
  jobs[0] = {"A", 1, 4, 2, 5, {56, 28, 19.04, 14.56}};
  EXPECT_EQ(allocate_by_marginal_gain(jobs, 4).ranks[0], 4);
  jobs[0].restart = 20;
  const auto kept = allocate_by_marginal_gain(jobs, 4);
  EXPECT_EQ(kept.ranks[0], 2);
  EXPECT_TRUE(contains(kept.reasons[0], "growing it by up to 2 ranks would save 13.4 s, not more than its 20.0 s"))
      << kept.reasons[0];
  // A waiting job shorter than a running one by less than the running one's preemption cost
  // does not displace it; shorter by more, it does.
  std::vector<MarginalJob> two(2);
  two[0] = {"R", 2, 2, 2, 30, {100}};
  two[1] = {"W", 2, 2, 0, 30, {80}};
  EXPECT_EQ(allocate_by_marginal_gain(two, 2).ranks, (std::vector<int>{2, 0}));
  two[1].remaining = {60};
  EXPECT_EQ(allocate_by_marginal_gain(two, 2).ranks, (std::vector<int>{0, 2}));
}

TEST(MarginalGain, TheKneeRuleTakesTheSmallestServiceFirstUpToItsKnee) {
  // C needs the least service (100 rank-s at 1 rank) and goes first: 1 -> 2 ranks saves 40 s
  // (linear: 50), 2 -> 3 saves 10 s (linear: 20, half of it: enough), 3 -> 4 saves 2 s of a linear
  // 12.5 s: C stops at 3 and D (400 rank-s) takes the last rank.
  std::vector<MarginalJob> jobs(2);
  jobs[0] = {"D", 1, 4, 0, 0, {400, 200, 134, 100}};
  jobs[1] = {"C", 1, 4, 0, 0, {100, 60, 50, 48}};
  const auto d = allocate_by_marginal_gain(jobs, 4, 0.5);
  EXPECT_EQ(d.ranks, (std::vector<int>{1, 3}));
  EXPECT_TRUE(contains(d.reasons[1],
                       "in its turn stopped at 3 ranks: one more would save 2.0 s, 16% of a linear speedup's 12.5 s "
                       "(under 50%)"))
      << d.reasons[1];
  // Optimus's rule spreads them: both from 1 rank, then the ranks where they save most (D).
  EXPECT_EQ(allocate_by_marginal_gain(jobs, 4, 0).ranks, (std::vector<int>{3, 1}));
}

TEST(ModelPolicy, SmallestServiceFirstAtItsKnee) {
  // A: 100, 50, 34, 26 s at 1-4 ranks (100 rank-s at least); B: 40, 22, 16, 14 s (40 rank-s).
  // B goes first and every rank still saves half a linear speedup's: B on 4 ranks 0-14 s, then
  // A on 4 ranks for 26 s.
  const HandQueue q = hand_queue({{"A", 0, 1, {100, 50, 34, 26}, 5}, {"B", 0, 1, {40, 22, 16, 14}, 5}});
  auto model = make_policy("model", {});
  const ScheduleResult r = simulate(q.jobs, q.prices, 4, *model, {0});
  EXPECT_DOUBLE_EQ(outcome(q, r, "B").end, 14);
  EXPECT_DOUBLE_EQ(outcome(q, r, "A").start, 14);
  EXPECT_DOUBLE_EQ(outcome(q, r, "A").end, 40);
  EXPECT_DOUBLE_EQ(r.mean_jct, 27);
  EXPECT_EQ(r.preemptions, 0);
}

TEST(ModelPolicy, OptimusRuleOnTheModelsPricesGrowsWhenTheGainPaysTheRestart) {
  // The MarginalGain example simulated with knee 0 and preemption 5 s: A and B on 2 ranks each;
  // B ends at 22 s; A (28 s left at 2 ranks) grows to 4 for 5 s + 14.56 s: ends at 41.56 s.
  const HandQueue q = hand_queue({{"A", 0, 1, {100, 50, 34, 26}, 5}, {"B", 0, 1, {40, 22, 16, 14}, 5}});
  PolicyOptions greedy;
  greedy.knee = 0;
  auto model = make_policy("model", greedy);
  const ScheduleResult r = simulate(q.jobs, q.prices, 4, *model, {0});
  EXPECT_DOUBLE_EQ(outcome(q, r, "B").end, 22);
  EXPECT_NEAR(outcome(q, r, "A").end, 22 + 5 + 0.56 * 26, 1e-9);
  EXPECT_EQ(r.preemptions, 1);
  // With a 20 s restart A stays on 2 ranks: 50 s.
  const HandQueue costly = hand_queue({{"A", 0, 1, {100, 50, 34, 26}, 20}, {"B", 0, 1, {40, 22, 16, 14}, 20}});
  const ScheduleResult k = simulate(costly.jobs, costly.prices, 4, *model, {0});
  EXPECT_DOUBLE_EQ(outcome(costly, k, "A").end, 50);
  EXPECT_EQ(k.preemptions, 0);
}

}  // namespace
