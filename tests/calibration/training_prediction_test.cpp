// dtrain train --profile: the plan of the run being trained writes the model's choice back into
// the data-parallel configuration and logs it.
#include "calibration/training_prediction.h"

#include <gtest/gtest.h>

#include "nn/models/models.h"
#include "perfmodel/perfmodel_test_util.h"

namespace dtrain::perf {
namespace {

TEST(TrainingPrediction, WritesTheChoiceBackAndLogsIt) {
  Rng rng(0);
  auto model = make_model("mlp", ModelInput{}, rng);
  DataParallelConfig dp;
  dp.algorithm = comm::Algorithm::kAuto;
  const auto plan = plan_for_train("skylake-sp+eth-10g", *model, Shape{1, 28, 28}, "mlp", 4, 32, dp, true, true);
  ASSERT_TRUE(plan.has_value());
  ASSERT_TRUE(plan->choice.has_value());
  EXPECT_EQ(dp.algorithm, plan->choice->chosen.algorithm);
  EXPECT_EQ(dp.bucket_bytes, plan->choice->chosen.bucket_bytes);
  const nlohmann::json j = plan->log_fields();
  EXPECT_EQ(j["auto"]["allreduce"], std::string(comm::algorithm_name(dp.algorithm)));
  EXPECT_EQ(j["auto"]["alternatives"].size(), plan->choice->alternatives.size());
  EXPECT_DOUBLE_EQ(j["predicted"]["step_s"].get<double>(), plan->prediction.step);
  EXPECT_DOUBLE_EQ(prediction_from_json(j["predicted"]).step, plan->prediction.step);
  EXPECT_FALSE(plan_for_train("", *model, Shape{1, 28, 28}, "mlp", 4, 32, dp, true, true).has_value());
}

TEST(TrainingPrediction, PricesTheMatrixLayersInTheRunsPrecision) {
  Rng rng(0);
  auto model = make_model("lenet", ModelInput{}, rng);
  DataParallelConfig dp;
  const auto f32 = plan_for_train("a100", *model, Shape{1, 28, 28}, "lenet", 1, 256, dp, false, false);
  const auto bf16 =
      plan_for_train("a100", *model, Shape{1, 28, 28}, "lenet", 1, 256, dp, false, false, 0, std::nullopt, {}, "bf16");
  ASSERT_TRUE(f32 && bf16);
  // The A100's bf16 tensor cores are 16x its f32 rate: the step's compute falls, the update (f32
  // master weights) does not.
  EXPECT_LT(bf16->prediction.phases.forward, 0.5 * f32->prediction.phases.forward);
  EXPECT_DOUBLE_EQ(bf16->prediction.phases.update, f32->prediction.phases.update);
  try {
    (void)plan_for_train("skylake-sp", *model, Shape{1, 28, 28}, "lenet", 1, 64, dp, false, false, 0, std::nullopt, {},
                         "bf16");
    FAIL() << "a profile without bf16 rates priced a bf16 run";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("device.precisions.bf16"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace dtrain::perf
