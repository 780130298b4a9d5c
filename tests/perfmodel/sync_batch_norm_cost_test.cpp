// --sync-bn in the model (perfmodel/step_model.cpp): each batch-norm layer's forward and backward
// wait for a sum of 2C + 1 doubles over the workers, priced as half a ring allreduce of those
// bytes, once per micro-batch; one worker pays nothing, and parameter servers refuse it.
#include <gtest/gtest.h>

#include "core/error.h"
#include "perfmodel/allreduce_time.h"
#include "perfmodel/profile.h"
#include "perfmodel/step_model.h"
#include "perfmodel/workload.h"

namespace dtrain::perf {
namespace {

TEST(SyncBatchNormCost, TwoSumsPerBatchNormLayerAndMicroBatch) {
  const Workload w = describe_zoo_model("resnet20", "cifar10");
  const Profile p = load_profile("skylake-sp+eth-10g");
  RunConfig c;
  c.workers = 8;
  c.batch_per_worker = 64;
  c.accumulate = 2;
  const StepPrediction plain = predict_step(w, p, c);
  c.sync_batch_norm = true;
  const StepPrediction synced = predict_step(w, p, c);
  const AllreducePlan small{comm::Algorithm::kRing, 8, false, DType::kF32, chunk_bytes_of(c, p)};
  double want = 0;
  int norms = 0;
  for (const LayerSummary& l : w.layers) {
    if (l.kind != "batch_norm") continue;
    ++norms;
    want += 2 * 2 * allreduce_time(small, static_cast<std::size_t>(2 * (2 * l.output[0] + 1)), p).seconds / 2;
  }
  EXPECT_EQ(norms, 21);  // the stem, two per block, two projection shortcuts
  EXPECT_GT(want, 0);
  EXPECT_NEAR(synced.sync_batch_norm, want, 1e-12);
  EXPECT_NEAR(synced.compute - plain.compute, want, 1e-12);
  EXPECT_GT(synced.step, plain.step);
  c.workers = 1;
  EXPECT_EQ(predict_step(w, p, c).sync_batch_norm, 0.0) << "one worker sums nothing";
  c.workers = 8;
  c.exchange = Exchange::kParameterServer;
  EXPECT_THROW((void)predict_step(w, p, c), InputError);
}

}  // namespace
}  // namespace dtrain::perf
