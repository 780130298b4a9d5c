// --allreduce auto / --bucket-mb auto with a profile: the model's argmin, and the log's account
// of it.
#include "perfmodel/auto_choice.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "nn/models/models.h"
#include "perfmodel/allreduce_time.h"
#include "perfmodel_test_util.h"

namespace dtrain::perf {
namespace {

TEST(AutoChoice, PicksTheArgminOfThePredictedStep) {
  const Workload w = describe_zoo_model("lenet", "fashion-mnist");
  for (const Profile& p : {testing::test_profile(1, 5e-5, 1e8), testing::test_profile(8, 1e-6, 1e10)}) {
    RunConfig base;
    base.workers = 8;
    base.batch_per_worker = 16;
    const AutoChoice c = choose_by_prediction(w, p, base, true, true);
    ASSERT_EQ(c.alternatives.size(), 4 * bucket_candidates(w).size());
    double best = c.alternatives.front().step;
    for (comm::Algorithm a :
         {comm::Algorithm::kRing, comm::Algorithm::kTree, comm::Algorithm::kButterfly, comm::Algorithm::kOneToAll}) {
      for (std::size_t b : bucket_candidates(w)) {
        RunConfig x = base;
        x.algorithm = a;
        x.bucket_bytes = b;
        const double step = predict_step(w, p, x).step;
        EXPECT_GE(step, c.prediction.step) << comm::algorithm_name(a) << " " << b;
        best = std::min(best, step);
      }
    }
    EXPECT_DOUBLE_EQ(c.prediction.step, best);
    EXPECT_DOUBLE_EQ(predict_step(w, p, c.chosen).step, best);
    for (std::size_t i = 1; i < c.alternatives.size(); ++i) {
      EXPECT_LE(c.alternatives[i - 1].step, c.alternatives[i].step);  // fastest first
    }
    EXPECT_NE(describe_choice(c).find("chose "), std::string::npos);
  }
}

TEST(AutoChoice, OnlyTheAutoSettingsChange) {
  const Workload w = describe_zoo_model("mlp", "fashion-mnist");
  RunConfig base;
  base.workers = 4;
  base.algorithm = comm::Algorithm::kTree;
  base.bucket_bytes = 3 << 20;
  base.comm_dtype = DType::kF16;
  const Profile p = testing::test_profile(1, 1e-5, 1e9);
  const AutoChoice buckets = choose_by_prediction(w, p, base, false, true);
  EXPECT_EQ(buckets.chosen.algorithm, comm::Algorithm::kTree);
  EXPECT_EQ(buckets.chosen.comm_dtype, DType::kF16);
  const AutoChoice algorithm = choose_by_prediction(w, p, base, true, false);
  EXPECT_EQ(algorithm.chosen.bucket_bytes, std::size_t{3} << 20);
  EXPECT_EQ(algorithm.alternatives.size(), 4u);
  for (const Alternative& a : algorithm.alternatives) EXPECT_NE(a.algorithm, comm::Algorithm::kMpi);
}

// shm's ladder for `workers`, far below any message's time: 1 ns per KiB.
MeasuredAllreduce fast_shm(int workers) {
  return {workers, {{4096, 4e-9}, {static_cast<double>(64 << 20), 64e-6}}, "test", std::nullopt};
}

bool offers(const AutoChoice& c, comm::Algorithm a) {
  return std::any_of(c.alternatives.begin(), c.alternatives.end(),
                     [a](const Alternative& x) { return x.algorithm == a; });
}

TEST(AutoChoice, PicksShmWhereItsLadderIsFarFaster) {
  const Workload w = describe_zoo_model("mlp", "fashion-mnist");
  RunConfig base;
  base.workers = 2;
  base.batch_per_worker = 64;
  Profile p = testing::test_profile(2, 1e-5, 1e8);  // one node of two, a slow same-host link
  p.shm_allreduce = fast_shm(2);
  EXPECT_TRUE(shm_candidate(p, 2));
  const AutoChoice c = choose_by_prediction(w, p, base, true, true);
  EXPECT_EQ(c.chosen.algorithm, comm::Algorithm::kShm) << describe_choice(c);
  EXPECT_EQ(c.alternatives.size(), 5 * bucket_candidates(w).size());
  EXPECT_NE(describe_choice(c).find("chose shm"), std::string::npos) << describe_choice(c);
  // Choosing the bucket alone keeps the algorithm given.
  EXPECT_FALSE(offers(choose_by_prediction(w, p, base, false, true), comm::Algorithm::kShm));
}

TEST(AutoChoice, NeverOffersShmAcrossNodesOrWithoutItsLadder) {
  const Workload w = describe_zoo_model("mlp", "fashion-mnist");
  RunConfig base;
  base.workers = 2;
  base.batch_per_worker = 64;
  // Without a ladder (every spec-sheet profile): its formula alone never competes.
  Profile p = testing::test_profile(2, 1e-5, 1e8);
  EXPECT_FALSE(shm_candidate(p, 2));
  EXPECT_FALSE(offers(choose_by_prediction(w, p, base, true, true), comm::Algorithm::kShm));
  EXPECT_FALSE(
      offers(choose_by_prediction(w, load_profile("8xa100-nvlink"), base, true, false), comm::Algorithm::kShm));
  // A ladder for another worker count.
  p.shm_allreduce = fast_shm(4);
  EXPECT_FALSE(shm_candidate(p, 2));
  EXPECT_FALSE(offers(choose_by_prediction(w, p, base, true, true), comm::Algorithm::kShm));
  // Workers on two nodes: shm cannot run (and choosing does not throw).
  p = testing::test_profile(1, 1e-5, 1e8);
  p.shm_allreduce = fast_shm(2);
  EXPECT_FALSE(shm_candidate(p, 2));
  const AutoChoice across = choose_by_prediction(w, p, base, true, true);
  EXPECT_FALSE(offers(across, comm::Algorithm::kShm));
  EXPECT_NE(across.chosen.algorithm, comm::Algorithm::kShm);
  // One worker: nothing to reduce.
  EXPECT_FALSE(shm_candidate(testing::test_profile(8), 1));
}

TEST(AutoChoice, BucketCandidatesReachOneBucketForEverything) {
  const Workload w = describe_zoo_model("mlp", "fashion-mnist");  // 669,706 parameters: 2.7 MB
  const std::vector<std::size_t> b = bucket_candidates(w);
  EXPECT_EQ(b.front(), 0u);
  EXPECT_EQ(b[1], std::size_t{64} << 10);
  EXPECT_GE(b.back(), 4u * 669706u);
  EXPECT_LT(b[b.size() - 2], 4u * 669706u);
  EXPECT_EQ(bucket_label(0), "0 (one per parameter)");
  EXPECT_EQ(bucket_label(std::size_t{4} << 20), "4 MiB");
  EXPECT_EQ(bucket_label(std::size_t{64} << 10), "64 KiB");
}
}  // namespace
}  // namespace dtrain::perf
