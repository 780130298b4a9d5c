// The large-batch learning rate (optim/lr_scaling.h) and the gradual warmup it starts from.
#include "optim/lr_scaling.h"

#include <gtest/gtest.h>

#include <cmath>

#include "core/error.h"
#include "optim/schedule.h"

namespace dtrain {
namespace {

TEST(LrScaling, RulesFollowTheGlobalBatch) {
  EXPECT_DOUBLE_EQ(scaled_lr(LrScaling::kLinear, 0.1, 8192, 256), 3.2);  // Goyal et al.'s 0.1 * 32
  EXPECT_DOUBLE_EQ(scaled_lr(LrScaling::kSqrt, 0.1, 8192, 256), 0.1 * std::sqrt(32.0));
  EXPECT_DOUBLE_EQ(scaled_lr(LrScaling::kNone, 0.1, 8192, 256), 0.1);
  EXPECT_DOUBLE_EQ(scaled_lr(LrScaling::kLinear, 0.1, 128, 256), 0.05) << "a smaller batch scales down";
  EXPECT_THROW(scaled_lr(LrScaling::kLinear, 0.1, 0, 256), InputError);
  EXPECT_THROW(scaled_lr(LrScaling::kLinear, 0.1, 256, 0), InputError);
  EXPECT_THROW(scaled_lr(LrScaling::kLinear, -0.1, 256, 256), InputError);
  for (LrScaling r : {LrScaling::kNone, LrScaling::kLinear, LrScaling::kSqrt}) {
    EXPECT_EQ(parse_lr_scaling(lr_scaling_name(r)), r);
  }
  EXPECT_THROW(parse_lr_scaling("cubic"), InputError);
}

// Goyal et al.'s warmup for k = 32: lr / 32 at epoch 0, rising by a constant amount per step to
// lr at the end of the warmup, then the schedule.
TEST(LrScaling, GradualWarmupStartsAtTheBaseBatchsRate) {
  ScheduleConfig c;
  c.name = "constant";
  c.base_lr = scaled_lr(LrScaling::kLinear, 0.1, 8192, 256);
  c.warmup_epochs = 5;
  c.warmup_start_factor = 1.0 / 32;
  const auto s = make_schedule(c);
  EXPECT_DOUBLE_EQ(s->lr(0), 0.1);
  EXPECT_NEAR(s->lr(2.5), (0.1 + 3.2) / 2, 1e-12);
  EXPECT_NEAR(s->lr(5 - 1e-9), 3.2, 1e-8) << "continuous at the join";
  EXPECT_DOUBLE_EQ(s->lr(5), 3.2);
  EXPECT_NEAR(s->lr(1.25) - s->lr(1.0), s->lr(4.25) - s->lr(4.0), 1e-12) << "a constant amount per step";
}

}  // namespace
}  // namespace dtrain
