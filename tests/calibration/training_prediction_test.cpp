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

}  // namespace
}  // namespace dtrain::perf
