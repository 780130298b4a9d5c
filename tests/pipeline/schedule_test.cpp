// Pipeline schedules: the action lists of GPipe and 1F1B, the activations each stage holds, and
// their timing on the model's clock (perfmodel/pipeline_time.h) against the closed forms.
#include "pipeline/schedule.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "core/error.h"
#include "perfmodel/pipeline_time.h"

namespace dtrain::pipeline {
namespace {

using perf::simulate_pipeline;
using perf::StageTime;

TEST(PipelineSchedule, GPipeRunsEveryForwardThenEveryBackward) {
  EXPECT_EQ(describe(stage_actions(ScheduleKind::kGPipe, 3, 1, 3)), "F0 F1 F2 B0 B1 B2");
  const auto mid = stage_actions(ScheduleKind::kGPipe, 3, 1, 1);
  const std::vector<Action> expected{{ActionKind::kRecvActivation, 0}, {ActionKind::kForward, 0},
                                     {ActionKind::kSendActivation, 0}, {ActionKind::kRecvGradient, 0},
                                     {ActionKind::kBackward, 0},       {ActionKind::kSendGradient, 0}};
  EXPECT_EQ(mid, expected);
}

TEST(PipelineSchedule, OneFOneBWarmsUpThenAlternates) {
  // Stage s of K runs K - s - 1 forwards first.
  EXPECT_EQ(describe(stage_actions(ScheduleKind::kOneFOneB, 3, 0, 5)), "F0 F1 F2 B0 F3 B1 F4 B2 B3 B4");
  EXPECT_EQ(describe(stage_actions(ScheduleKind::kOneFOneB, 3, 1, 5)), "F0 F1 B0 F2 B1 F3 B2 F4 B3 B4");
  EXPECT_EQ(describe(stage_actions(ScheduleKind::kOneFOneB, 3, 2, 5)), "F0 B0 F1 B1 F2 B2 F3 B3 F4 B4");
  // Fewer micro-batches than stages: the early stages fill and drain.
  EXPECT_EQ(describe(stage_actions(ScheduleKind::kOneFOneB, 4, 0, 2)), "F0 F1 B0 B1");
  // The first stage receives nothing, the last sends nothing forward.
  for (const Action& a : stage_actions(ScheduleKind::kOneFOneB, 3, 0, 4)) {
    EXPECT_NE(a.kind, ActionKind::kRecvActivation);
    EXPECT_NE(a.kind, ActionKind::kSendGradient);
  }
  for (const Action& a : stage_actions(ScheduleKind::kOneFOneB, 3, 2, 4)) {
    EXPECT_NE(a.kind, ActionKind::kSendActivation);
    EXPECT_NE(a.kind, ActionKind::kRecvGradient);
  }
}

TEST(PipelineSchedule, ActivationsHeldAreKMinusStageFor1F1BAndMForGPipe) {
  for (int k = 1; k <= 4; ++k)
    for (int m = 1; m <= 8; ++m)
      for (int s = 0; s < k; ++s) {
        EXPECT_EQ(peak_in_flight(stage_actions(ScheduleKind::kOneFOneB, k, s, m)), std::min(k - s, m));
        EXPECT_EQ(peak_in_flight(stage_actions(ScheduleKind::kGPipe, k, s, m)), m);
      }
}

TEST(PipelineSchedule, EveryStageRunsEachMicroBatchOnceEachWay) {
  for (auto kind : {ScheduleKind::kGPipe, ScheduleKind::kOneFOneB})
    for (int k = 1; k <= 4; ++k)
      for (int m = 1; m <= 8; ++m)
        for (const auto& list : pipeline_actions(kind, k, m)) {
          std::vector<int> forwards(m, 0), backwards(m, 0);
          for (const Action& a : list) {
            if (a.kind == ActionKind::kForward) ++forwards[a.micro_batch];
            if (a.kind == ActionKind::kBackward) {
              EXPECT_EQ(forwards[a.micro_batch], 1) << "a backward before its forward";
              ++backwards[a.micro_batch];
            }
          }
          EXPECT_EQ(forwards, std::vector<int>(m, 1));
          EXPECT_EQ(backwards, std::vector<int>(m, 1));
        }
}

TEST(PipelineSchedule, BadInputNamesTheProblem) {
  EXPECT_THROW(parse_schedule("interleaved"), InputError);
  EXPECT_EQ(parse_schedule("1f1b"), ScheduleKind::kOneFOneB);
  EXPECT_EQ(schedule_name(parse_schedule("gpipe")), "gpipe");
  EXPECT_THROW(stage_actions(ScheduleKind::kGPipe, 2, 2, 1), InputError);
  EXPECT_THROW(stage_actions(ScheduleKind::kGPipe, 0, 0, 1), InputError);
  try {
    stage_actions(ScheduleKind::kOneFOneB, 2, 0, 0);
    FAIL();
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("--micro-batches"), std::string::npos) << e.what();
  }
}

// Every (K, m) runs to the end on the clock: no schedule waits in a cycle.
TEST(PipelineTime, NoScheduleDeadlocks) {
  for (auto kind : {ScheduleKind::kGPipe, ScheduleKind::kOneFOneB})
    for (int k = 1; k <= 4; ++k)
      for (int m = 1; m <= 8; ++m) {
        const std::vector<StageTime> stages(k, StageTime{1.0, 2.0});
        EXPECT_NO_THROW(simulate_pipeline(kind, m, stages, std::vector<double>(k - 1, 0.1))) << k << " " << m;
      }
}

TEST(PipelineTime, BalancedStagesMatchTheClosedForm) {
  const double f = 1.0, b = 2.0, t = 0.25;
  for (auto kind : {ScheduleKind::kGPipe, ScheduleKind::kOneFOneB})
    for (int k = 1; k <= 4; ++k)
      for (int m = 1; m <= 8; ++m) {
        const auto timing =
            simulate_pipeline(kind, m, std::vector<StageTime>(k, {f, b}), std::vector<double>(k - 1, t));
        const double closed_form = (m + k - 1) * (f + b) + 2 * (k - 1) * t;
        if (kind == ScheduleKind::kGPipe) {
          EXPECT_NEAR(timing.step_s, closed_form, 1e-12) << k << " " << m;
        } else {
          // 1F1B's steady state waits for each gradient's round trip as well.
          EXPECT_GE(timing.step_s, closed_form - 1e-12) << k << " " << m;
          EXPECT_LE(timing.step_s, closed_form + 2 * (m - 1) * t + 1e-12) << k << " " << m;
        }
        const auto no_transfer =
            simulate_pipeline(kind, m, std::vector<StageTime>(k, {f, b}), std::vector<double>(k - 1, 0.0));
        EXPECT_NEAR(no_transfer.bubble_fraction(), static_cast<double>(k - 1) / (m + k - 1), 1e-12);
        for (int s = 0; s < k; ++s) EXPECT_NEAR(no_transfer.idle_s[s], (k - 1) * (f + b), 1e-12);
      }
}

TEST(PipelineTime, TheSlowestStageSetsTheSlope) {
  // Fill-drain of identical jobs: sum of the stages once, then (m - 1) times the slowest.
  const std::vector<StageTime> stages{{1, 2}, {3, 6}, {1, 2}};
  const int m = 6;
  const auto gpipe = simulate_pipeline(ScheduleKind::kGPipe, m, stages, {0, 0});
  EXPECT_NEAR(gpipe.step_s, (1 + 3 + 1) + (m - 1) * 3 + (2 + 6 + 2) + (m - 1) * 6, 1e-12);
  const auto one_f_one_b = simulate_pipeline(ScheduleKind::kOneFOneB, m, stages, {0, 0});
  // The slowest stage computes m (f + b); stage 0's first forward comes before and its last
  // backward after.
  EXPECT_GE(one_f_one_b.step_s, m * (3 + 6) + 1 + 2);
  EXPECT_NEAR(one_f_one_b.busy_s[1], m * (3 + 6), 1e-12);
}

TEST(PipelineTime, ACycleOfReceivesIsReportedNotRunForever) {
  // Both stages receive before they send.
  const std::vector<std::vector<Action>> lists{
      {{ActionKind::kRecvGradient, 0}, {ActionKind::kForward, 0}, {ActionKind::kSendActivation, 0}},
      {{ActionKind::kRecvActivation, 0}, {ActionKind::kBackward, 0}, {ActionKind::kSendGradient, 0}}};
  try {
    simulate_pipeline(lists, {{1, 1}, {1, 1}}, {0});
    FAIL();
  } catch (const InternalError& e) {
    EXPECT_NE(std::string(e.what()).find("deadlocks"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace dtrain::pipeline
