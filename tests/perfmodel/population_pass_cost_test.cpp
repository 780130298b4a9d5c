// --bn-stats population in the model (perfmodel/run_model.cpp): after each epoch every worker runs
// its share of the chunks forward, at the training step's forward rate per micro-batch; the whole
// training set where no count is given; included in the epoch's time.
#include <gtest/gtest.h>

#include "perfmodel/run_model.h"
#include "perfmodel/workload.h"

namespace dtrain::perf {
namespace {

TEST(PopulationPassCost, ChunksPerWorkerAtTheForwardRate) {
  const Workload w = describe_zoo_model("resnet20", "fashion-mnist");
  const DatasetInfo d = dataset_info("fashion-mnist");
  const Profile p = load_profile("skylake-sp+eth-10g");
  RunConfig c;
  c.workers = 4;
  c.batch_per_worker = 256;
  c.accumulate = 2;  // chunks of 128
  const RunPrediction none = predict_run(w, d, p, c, 1);
  EXPECT_EQ(none.population_seconds, 0.0);
  c.population_chunks = 10;  // 3 on the busiest worker
  const RunPrediction ten = predict_run(w, d, p, c, 1);
  EXPECT_NEAR(ten.population_seconds, 3 * ten.step.phases.forward / 2, 1e-12);
  EXPECT_NEAR(ten.epoch_seconds - none.epoch_seconds, ten.population_seconds, 1e-9);
  c.population_chunks = -1;  // every sample: ceil(60000 / 128) = 469 chunks, 118 on the busiest worker
  const RunPrediction all = predict_run(w, d, p, c, 1);
  EXPECT_NEAR(all.population_seconds, 118 * all.step.phases.forward / 2, 1e-12);
}

}  // namespace
}  // namespace dtrain::perf
