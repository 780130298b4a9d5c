// dtrain predict --global-batch (perfmodel/scaling_prediction.h): every worker count shares the
// global batch, so each worker's batch shrinks with the count and the steps per epoch stay put;
// each row equals the prediction asked with that per-worker batch; a count that does not divide
// the global batch is named.
#include <gtest/gtest.h>

#include "core/error.h"
#include "perfmodel/scaling_prediction.h"

namespace dtrain::perf {
namespace {

ScalingQuery global_batch_query() {
  ScalingQuery q;
  q.model = "lenet";
  q.dataset = "mnist";
  q.workers = "8,64,256";
  q.profile = "skylake-sp+eth-10g";
  q.global_batch = 8192;
  q.epochs = 10;
  return q;
}

TEST(GlobalBatch, EachWorkerTakesItsShareAndStepsPerEpochStay) {
  const ScalingPrediction p = predict_scaling(global_batch_query());
  ASSERT_EQ(p.runs.size(), 3U);
  for (const RunPrediction& r : p.runs) {
    EXPECT_EQ(r.config.batch_per_worker * r.config.workers, 8192);
    EXPECT_EQ(r.steps_per_epoch, p.runs.front().steps_per_epoch);
    ScalingQuery one = global_batch_query();
    one.global_batch = 0;
    one.workers = std::to_string(r.config.workers);
    one.batch_per_worker = 8192 / r.config.workers;
    const RunPrediction same = predict_scaling(one).runs.front();
    EXPECT_DOUBLE_EQ(same.step.step, r.step.step);
    EXPECT_DOUBLE_EQ(same.total_seconds, r.total_seconds);
  }
  EXPECT_EQ(p.runs.front().steps_per_epoch, p.dataset.train_samples / 8192);
}

TEST(GlobalBatch, WorkerCountsMustDivideIt) {
  ScalingQuery q = global_batch_query();
  q.workers = "8,3";
  try {
    (void)predict_scaling(q);
    FAIL() << "3 workers accepted for a global batch of 8192";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("--global-batch 8192 is not a multiple of 3 workers"), std::string::npos)
        << e.what();
  }
  q.workers = "8";
  q.global_batch = -1;
  EXPECT_THROW((void)predict_scaling(q), InputError);
}

}  // namespace
}  // namespace dtrain::perf
