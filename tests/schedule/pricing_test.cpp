// The model's prices of a queue: each rank count's time is the model's run with the exchange it
// chooses, Tiresias rows count their samples, and preemption adds the checkpoint, the requeue and
// the restart; the cluster's description and its errors.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>

#include "comm/algorithm.h"
#include "core/error.h"
#include "perfmodel/auto_choice.h"
#include "perfmodel/run_model.h"
#include "schedule/cluster.h"
#include "schedule/job_pricing.h"
#include "schedule/trace.h"
#include "schedule_test_util.h"
#include "support/temp_dir.h"
#include "support/text.h"

namespace {

using dtrain::schedule::Cluster;
using dtrain::schedule::Job;
using dtrain::schedule::parse_trace;
using dtrain::schedule::PriceTable;
using dtrain::schedule::resolve_cluster;
using dtrain::test_support::contains;

constexpr const char* kProfile = "8xv100-nvlink+ib-edr";

TEST(Pricing, EachRankCountIsTheModelsRunWithTheExchangeItChooses) {
  dtrain::schedule::test::use_source_profiles();
  Cluster c;
  c.profile = kProfile;
  const dtrain::perf::Profile profile = resolve_cluster(c);
  EXPECT_EQ(c.ranks_per_node, 8);
  const std::vector<Job> jobs = parse_trace(
      "name,model,dataset,epochs,batch,min_ranks,max_ranks,submit_time,priority\n"
      "a,resnet20,,2,32,1,4,0,0\n",
      "q.csv", c.ranks());
  const PriceTable t = dtrain::schedule::price_jobs(jobs, c, profile);
  ASSERT_EQ(t.jobs.size(), 1u);
  ASSERT_EQ(t.jobs[0].by_ranks.size(), 4u);
  const dtrain::perf::Workload w = dtrain::perf::describe_zoo_model("resnet20", "cifar10");
  const dtrain::perf::DatasetInfo& d = dtrain::perf::dataset_info("cifar10");
  for (int ranks = 2; ranks <= 4; ++ranks) {
    dtrain::perf::RunConfig base;
    base.workers = ranks;
    base.batch_per_worker = 32;
    base.disk_bytes_per_sample = d.disk_bytes_per_sample;
    const auto choice = dtrain::perf::choose_by_prediction(w, profile, base, true, true);
    const dtrain::perf::RunPrediction run = dtrain::perf::predict_run(w, d, profile, choice.chosen, 2);
    const auto& p = t.jobs[0].at(ranks);
    EXPECT_NEAR(p.seconds, run.total_seconds, 1e-9 * run.total_seconds) << ranks;
    const int steps_per_epoch = 50000 / (32 * ranks);  // whole steps, as the sampler counts them
    EXPECT_DOUBLE_EQ(p.steps, 2.0 * steps_per_epoch);
    EXPECT_NEAR(p.step, p.compute + p.other, 1e-15);
    EXPECT_TRUE(contains(p.exchange, std::string(dtrain::comm::algorithm_name(choice.chosen.algorithm))));
  }
  // More ranks are faster here (the compute divides, the allreduce is small).
  EXPECT_LT(t.jobs[0].seconds(4), t.jobs[0].seconds(1) / 3);
  EXPECT_EQ(t.jobs[0].fastest_ranks(), 4);
  // Preemption: resnet20's 272474 parameters x 4 bytes x (1 + 1 momentum slot), written and read
  // at the node's disk rate (2.8 GB/s x 0.7), plus the 25 s requeue and 2 s restart.
  const auto& cost = t.jobs[0].preemption;
  EXPECT_DOUBLE_EQ(cost.checkpoint_bytes, 272474.0 * 8);
  EXPECT_NEAR(cost.write, 272474.0 * 8 / 1.96e9, 1e-12);
  EXPECT_NEAR(cost.total(), 27 + 2 * 272474.0 * 8 / 1.96e9, 1e-9);
  EXPECT_FALSE(cost.suspends);
  // A cluster that suspends: the stop costs its suspend seconds, the rest stays for resizes.
  c.preempt_by = dtrain::schedule::PreemptBy::kSuspend;
  c.suspend_seconds = 1.5;
  const PriceTable suspending = dtrain::schedule::price_jobs(jobs, c, profile);
  const auto& suspended = suspending.jobs[0].preemption;
  EXPECT_TRUE(suspended.suspends);
  EXPECT_DOUBLE_EQ(suspended.suspend, 1.5);
  EXPECT_DOUBLE_EQ(suspended.total(), cost.total());
}

TEST(Pricing, TiresiasRowsAreTheirSamplesAtTheModelsStep) {
  dtrain::schedule::test::use_source_profiles();
  Cluster c;
  c.profile = kProfile;
  const dtrain::perf::Profile profile = resolve_cluster(c);
  const std::vector<Job> jobs = parse_trace(
      "job_id,num_gpu,submit_time,iterations,model_name,duration,interval\n"
      "7,3,0,1001,resnet20,60,0\n",
      "t.csv", c.ranks());
  const PriceTable t = dtrain::schedule::price_jobs(jobs, c, profile);
  // 1001 steps x 32 x 3 ranks = 96096 samples: ceil(96096 / 64) = 1502 steps at 2 ranks.
  EXPECT_DOUBLE_EQ(t.jobs[0].at(3).steps, 1001);
  EXPECT_DOUBLE_EQ(t.jobs[0].at(2).steps, 1502);
  EXPECT_DOUBLE_EQ(t.jobs[0].at(2).seconds, 1502 * t.jobs[0].at(2).step);
  EXPECT_EQ(t.jobs[0].at(1).eval_seconds, 0);
}

TEST(Cluster, FileFieldsFlagsAndErrors) {
  dtrain::schedule::test::use_source_profiles();
  dtrain::test_support::TempDir dir;
  std::ofstream(dir.file("c.json")) << R"({"nodes": 3, "profile": "8xv100-nvlink+ib-edr", "requeue_seconds": 120,
                                        "checkpoint_write_bytes_per_s": 1e9, "preempt": "suspend",
                                        "suspend_seconds": 0.5})";
  Cluster c = dtrain::schedule::read_cluster_file(dir.file("c.json"), Cluster{});
  EXPECT_EQ(c.nodes, 3);
  EXPECT_EQ(c.preempt_by, dtrain::schedule::PreemptBy::kSuspend);
  EXPECT_DOUBLE_EQ(c.suspend_seconds, 0.5);
  EXPECT_DOUBLE_EQ(c.requeue_seconds, 120);
  resolve_cluster(c);
  EXPECT_EQ(c.ranks(), 24);
  EXPECT_DOUBLE_EQ(c.checkpoint_write_bytes_per_s, 1e9);
  EXPECT_NEAR(c.checkpoint_read_bytes_per_s, 1.96e9, 1);  // the profile's disk
  const auto error = [](Cluster k) {
    try {
      resolve_cluster(k);
    } catch (const dtrain::InputError& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  Cluster wrong;
  wrong.profile = kProfile;
  wrong.ranks_per_node = 4;
  EXPECT_TRUE(contains(error(wrong), "--ranks-per-node 4 but profile '8xv100-nvlink+ib-edr' has 8 devices per node"))
      << error(wrong);
  EXPECT_TRUE(contains(error(Cluster{}), "dtrain schedule needs --profile"));
  std::ofstream(dir.file("bad.json")) << R"({"nodes": 2, "gpus": 8})";
  try {
    dtrain::schedule::read_cluster_file(dir.file("bad.json"), Cluster{});
    FAIL() << "no error";
  } catch (const dtrain::InputError& e) {
    EXPECT_TRUE(contains(e.what(), "unknown field 'gpus'; valid: nodes, ranks_per_node, profile")) << e.what();
  }
  std::ofstream(dir.file("stop.json")) << R"({"preempt": "kill"})";
  try {
    dtrain::schedule::read_cluster_file(dir.file("stop.json"), Cluster{});
    FAIL() << "no error";
  } catch (const dtrain::InputError& e) {
    EXPECT_TRUE(contains(e.what(), "unknown preemption 'kill'; valid: requeue, suspend")) << e.what();
  }
}

}  // namespace
