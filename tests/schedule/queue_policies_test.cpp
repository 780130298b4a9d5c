// fifo, srtf and tiresias on hand-made queues whose schedules are worked out by hand, and the
// simulator's metrics (JCT, makespan, utilisation) on them.
#include <gtest/gtest.h>

#include "core/error.h"
#include "schedule/policy.h"
#include "schedule/simulator.h"
#include "schedule_test_util.h"
#include "support/text.h"

namespace {

using dtrain::schedule::make_policy;
using dtrain::schedule::PolicyOptions;
using dtrain::schedule::ScheduleResult;
using dtrain::schedule::simulate;
using dtrain::schedule::test::hand_queue;
using dtrain::schedule::test::HandQueue;
using dtrain::schedule::test::outcome;
using dtrain::test_support::contains;

ScheduleResult run_policy(const HandQueue& q, const std::string& policy, int capacity, double slice = 0,
                          const PolicyOptions& options = {}) {
  auto p = make_policy(policy, options);
  return simulate(q.jobs, q.prices, capacity, *p, {slice});
}

TEST(Fifo, TwoJobsOnTwoRanksAndTheMetrics) {
  // A holds both ranks 0-100; B (1 rank) waits and runs 100-150.
  const HandQueue q = hand_queue({{"A", 0, 2, {100}}, {"B", 10, 1, {50}}});
  const ScheduleResult r = run_policy(q, "fifo", 2);
  EXPECT_DOUBLE_EQ(outcome(q, r, "A").start, 0);
  EXPECT_DOUBLE_EQ(outcome(q, r, "A").end, 100);
  EXPECT_DOUBLE_EQ(outcome(q, r, "B").start, 100);
  EXPECT_DOUBLE_EQ(outcome(q, r, "B").end, 150);
  EXPECT_DOUBLE_EQ(outcome(q, r, "B").jct(), 140);
  EXPECT_DOUBLE_EQ(r.mean_jct, 120);
  EXPECT_DOUBLE_EQ(r.makespan, 150);
  // Busy 2 x 100 + 1 x 50 rank-seconds of 2 x 150.
  EXPECT_NEAR(r.utilisation, 250.0 / 300.0, 1e-12);
  EXPECT_EQ(r.preemptions, 0);
  ASSERT_EQ(r.actions.size(), 2u);
  EXPECT_EQ(r.actions[1].job, 1u);
  EXPECT_EQ(r.actions[1].ranks, 1);
  EXPECT_DOUBLE_EQ(r.actions[1].time, 100);
}

TEST(Fifo, StrictHeadOfLineBlocksASmallerLaterJob) {
  // A takes 2 of 3 ranks; B needs 2 and waits; C would fit in the last rank but waits behind B.
  const HandQueue q = hand_queue({{"A", 0, 2, {100}}, {"B", 1, 2, {50}}, {"C", 2, 1, {10}}});
  const ScheduleResult r = run_policy(q, "fifo", 3);
  EXPECT_DOUBLE_EQ(outcome(q, r, "B").start, 100);
  EXPECT_DOUBLE_EQ(outcome(q, r, "C").start, 100);
  EXPECT_DOUBLE_EQ(outcome(q, r, "C").end, 110);
  EXPECT_DOUBLE_EQ(outcome(q, r, "B").end, 150);
  EXPECT_NEAR(r.mean_jct, (100.0 + 149.0 + 108.0) / 3, 1e-9);
  // srtf lets C backfill the free rank at once.
  const ScheduleResult s = run_policy(q, "srtf", 3);
  EXPECT_DOUBLE_EQ(outcome(q, s, "C").start, 2);
  EXPECT_DOUBLE_EQ(outcome(q, s, "C").end, 12);
}

TEST(Srtf, AShortArrivalPreemptsTheLongJobWhichPaysItsPreemption) {
  // L (1000 s) runs from 0; at 100 s S (100 s) arrives: 900 s left for L against 100 s, so S
  // runs 100-200 and L stops; L restarts at 200, pays 30 s, and ends at 200 + 30 + 900.
  const HandQueue q = hand_queue({{"L", 0, 2, {1000}, 30}, {"S", 100, 2, {100}, 30}});
  const ScheduleResult r = run_policy(q, "srtf", 2, 600);
  EXPECT_DOUBLE_EQ(outcome(q, r, "S").start, 100);
  EXPECT_DOUBLE_EQ(outcome(q, r, "S").end, 200);
  EXPECT_NEAR(outcome(q, r, "L").end, 1130, 1e-9);
  EXPECT_EQ(outcome(q, r, "L").preemptions, 1);
  EXPECT_EQ(r.preemptions, 1);
  EXPECT_NEAR(r.overhead_rank_seconds, 60, 1e-9);  // 30 s on 2 ranks
  EXPECT_NEAR(r.mean_jct, (1130.0 + 100.0) / 2, 1e-9);
  // The cluster was never idle: every rank-second went to a job (the restart included).
  EXPECT_NEAR(r.utilisation, 1.0, 1e-12);
  ASSERT_EQ(outcome(q, r, "L").segments.size(), 2u);
  EXPECT_NEAR(outcome(q, r, "L").segments[1].overhead, 30, 1e-9);
  // The stop is an action with the rule that made it.
  bool stopped = false;
  for (const auto& a : r.actions) {
    if (a.job == 0 && a.ranks == 0) {
      stopped = true;
      EXPECT_DOUBLE_EQ(a.time, 100);
      EXPECT_EQ(a.previous, 2);
      EXPECT_TRUE(contains(a.reason, "stopped: needs 2 ranks, 0 free")) << a.reason;
    }
  }
  EXPECT_TRUE(stopped);
  // fifo never preempts: S waits for L.
  const ScheduleResult f = run_policy(q, "fifo", 2, 600);
  EXPECT_DOUBLE_EQ(outcome(q, f, "S").end, 1100);
  EXPECT_EQ(f.preemptions, 0);
}

TEST(Srtf, TheRequeueWaitRunsFromTheStopSoAJobThatWaitedLongerPaysOnlyItsRestart) {
  // L's preemption: checkpoint write 4 s + requeue wait 26 s on the clock from the stop, then a
  // restart of 5 s at every start. S1 (10 s) preempts L at 100; L restarts at 110 having waited
  // 10 s: it pays 5 + (4 + 26 - 10) = 25 s and ends 110 + 25 + 900 = 1035.
  HandQueue q = hand_queue({{"L", 0, 2, {1000}}, {"S1", 100, 2, {10}}});
  q.prices.jobs[0].preemption.write = 4;
  q.prices.jobs[0].preemption.requeue = 26;
  q.prices.jobs[0].preemption.restart = 5;
  const ScheduleResult soon = run_policy(q, "srtf", 2);
  EXPECT_NEAR(outcome(q, soon, "L").end, 1035, 1e-9);
  EXPECT_NEAR(outcome(q, soon, "L").segments[1].overhead, 25, 1e-9);
  // A 100 s job instead: L waits 100 s, more than the write and the requeue, and pays 5 s.
  q.prices.jobs[1] = dtrain::schedule::hand_price(2, {100}, 0);
  const ScheduleResult late = run_policy(q, "srtf", 2);
  EXPECT_NEAR(outcome(q, late, "L").end, 200 + 5 + 900, 1e-9);
}

TEST(Srtf, ASuspendedJobResumesOnItsRanksAfterTheSuspendLatencyAlone) {
  // The same queue on a cluster that suspends: L is suspended at 100, resumed at 110 on its 2
  // ranks, pays the 1 s suspend latency instead of 25 s, and ends at 110 + 1 + 900.
  HandQueue q = hand_queue({{"L", 0, 2, {1000}}, {"S1", 100, 2, {10}}});
  auto& cost = q.prices.jobs[0].preemption;
  cost.write = 4;
  cost.requeue = 26;
  cost.restart = 5;
  cost.suspends = true;
  cost.suspend = 1;
  const ScheduleResult r = run_policy(q, "srtf", 2);
  EXPECT_NEAR(outcome(q, r, "L").end, 1011, 1e-9);
  EXPECT_EQ(outcome(q, r, "L").preemptions, 1);
  ASSERT_EQ(outcome(q, r, "L").segments.size(), 2u);
  EXPECT_NEAR(outcome(q, r, "L").segments[1].overhead, 1, 1e-9);
  EXPECT_NEAR(r.overhead_rank_seconds, 2, 1e-9);  // 1 s on 2 ranks
}

// Gives each job the ranks of the first script entry for its name whose time has come.
class ScriptedPolicy : public dtrain::schedule::Policy {
 public:
  struct Step {
    double from;
    std::string job;
    int ranks;
  };
  explicit ScriptedPolicy(std::vector<Step> steps) : steps_(std::move(steps)) {}
  std::string name() const override { return "scripted"; }
  std::vector<dtrain::schedule::Assignment> allocate(const dtrain::schedule::PolicyInput& in) override {
    std::vector<dtrain::schedule::Assignment> out(in.jobs.size());
    for (std::size_t i = 0; i < in.jobs.size(); ++i) {
      for (const Step& s : steps_) {
        if (s.job == in.jobs[i].name && in.now >= s.from) out[i].ranks = s.ranks;
      }
    }
    return out;
  }

 private:
  std::vector<Step> steps_;
};

TEST(Simulator, ASuspendedJobResumedOnOtherRanksPaysTheWholePreemption) {
  // L runs on 2 ranks (1000 s; 1900 s on 1), is suspended while S1 holds both ranks (100-110),
  // and comes back on 1 rank beside S2: a suspension cannot resize, so it pays the whole 30 s.
  HandQueue q = hand_queue({{"L", 0, 1, {1900, 1000}}, {"S1", 100, 2, {10}}, {"S2", 105, 1, {500}}});
  auto& cost = q.prices.jobs[0].preemption;
  cost.restart = 30;
  cost.suspends = true;
  cost.suspend = 1;
  ScriptedPolicy p({{0, "L", 2}, {100, "L", 0}, {100, "S1", 2}, {110, "L", 1}, {110, "S2", 1}});
  const ScheduleResult r = simulate(q.jobs, q.prices, 2, p, {0});
  const auto& segments = outcome(q, r, "L").segments;
  ASSERT_EQ(segments.size(), 2u);
  EXPECT_EQ(segments[1].ranks, 1);
  EXPECT_NEAR(segments[1].overhead, 30, 1e-9);
  // 900 s of the 2-rank work left is 1710 s on 1 rank.
  EXPECT_NEAR(outcome(q, r, "L").end, 110 + 30 + 1710, 1e-6);
}

TEST(Tiresias, DemotionAfterTheThresholdThenFirstInFirstOutWithinTheQueue) {
  // Threshold 100 rank-seconds, both jobs on 2 ranks, preemption 20 s.
  //   0-50    A runs (queue 0) and reaches 100 rank-s at 50 s: demoted;
  //   50-100  B (queue 0) runs, A stops; B reaches 100 rank-s at 100 s: demoted;
  //   100     both in queue 1: A first (submitted first); it pays 20 s and has 250 s left: ends 370;
  //   370     B restarts, pays 20 s, 150 s left: ends 540.
  const HandQueue q = hand_queue({{"A", 0, 2, {300}, 20}, {"B", 10, 2, {200}, 20}});
  PolicyOptions o;
  o.thresholds = {100};
  const ScheduleResult r = run_policy(q, "tiresias", 2, 0, o);
  EXPECT_NEAR(outcome(q, r, "A").end, 370, 1e-9);
  EXPECT_NEAR(outcome(q, r, "B").start, 50, 1e-9);
  EXPECT_NEAR(outcome(q, r, "B").end, 540, 1e-9);
  EXPECT_EQ(outcome(q, r, "A").preemptions, 1);
  EXPECT_EQ(outcome(q, r, "B").preemptions, 1);
  EXPECT_NEAR(r.mean_jct, (370.0 + 530.0) / 2, 1e-9);
  ASSERT_GE(r.actions.size(), 3u);
  EXPECT_NEAR(r.actions[1].time, 50, 1e-9);
  EXPECT_TRUE(contains(r.actions[2].reason, "queue 0 (attained 0 rank-s, < 100)")) << r.actions[2].reason;
  // With no threshold it is one first-in, first-out queue: no preemption.
  const ScheduleResult one = run_policy(q, "tiresias", 2, 0);
  EXPECT_EQ(one.preemptions, 0);
  EXPECT_NEAR(outcome(q, one, "B").end, 500, 1e-9);
}

TEST(Tiresias, DefaultThresholdIsTheMedianDemand) {
  const HandQueue q = hand_queue({{"A", 0, 2, {300}}, {"B", 0, 1, {50}}, {"C", 0, 1, {10, 400}}});
  // Demands at requested ranks: A 2 x 300, B 1 x 50, C 2 x 400.
  EXPECT_EQ(dtrain::schedule::default_thresholds(q.jobs, q.prices), std::vector<double>{600});
}

TEST(Policies, UnknownNameListsTheValidOnes) {
  try {
    make_policy("gandiva", {});
    FAIL() << "no error";
  } catch (const dtrain::InputError& e) {
    EXPECT_TRUE(contains(e.what(), "unknown policy 'gandiva'; valid: fifo, srtf, tiresias, optimus, model, all"))
        << e.what();
  }
}

}  // namespace
