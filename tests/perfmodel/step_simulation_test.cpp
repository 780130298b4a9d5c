// The two-thread step simulation: the plain max-plus timeline when compute and communication do
// not slow each other, and the shared-core slowdown when they do.
#include "perfmodel/step_simulation.h"

#include <gtest/gtest.h>

#include "perfmodel/step_model.h"
#include "perfmodel_test_util.h"

namespace dtrain::perf {
namespace {

// Forward 1 s; backward of two layers, 1 s each, the first releasing bucket 0 (2 s), the second
// bucket 1 (1 s); update 0.5 s.
SimInput two_buckets() {
  SimInput in;
  in.items = {{1.0, {}}, {1.0, {0}}, {1.0, {1}}};
  in.forward_items = 1;
  in.bucket_seconds = {2.0, 1.0};
  in.update = 0.5;
  return in;
}

TEST(StepSimulation, MaxPlusWhenNothingIsShared) {
  const SimStep s = simulate_steps(two_buckets());
  EXPECT_DOUBLE_EQ(s.bucket_ready[0], 2.0);
  EXPECT_DOUBLE_EQ(s.bucket_start[0], 2.0);
  EXPECT_DOUBLE_EQ(s.bucket_end[0], 4.0);
  EXPECT_DOUBLE_EQ(s.bucket_start[1], 4.0);  // waits for bucket 0
  EXPECT_DOUBLE_EQ(s.bucket_end[1], 5.0);
  EXPECT_DOUBLE_EQ(s.backward_end, 3.0);
  EXPECT_DOUBLE_EQ(s.update_start, 5.0);
  EXPECT_DOUBLE_EQ(s.period, 5.5);
}

TEST(StepSimulation, SharedCoresSlowWhateverOverlaps) {
  SimInput in = two_buckets();
  in.compute_share = 0.5;
  in.comm_share = 0.25;
  const SimStep s = simulate_steps(in);
  // From 2 s both run: the last backward item (1 s of work at half speed) ends at 4 s, when
  // bucket 0 has done 2 x 0.25 = 0.5 s of its 2 s; the remaining 1.5 s run alone.
  EXPECT_DOUBLE_EQ(s.backward_end, 4.0);
  EXPECT_DOUBLE_EQ(s.bucket_end[0], 5.5);
  EXPECT_DOUBLE_EQ(s.bucket_end[1], 6.5);
  EXPECT_DOUBLE_EQ(s.period, 7.0);
}

TEST(StepSimulation, ABurstAllowancePassesBytesAfterTheLinkIdles) {
  SimInput in = two_buckets();
  in.bucket_burstable = {1.0, 1.0};
  in.burst = 0.5;
  SimStep s = simulate_steps(in);
  // From bucket 1's end (5 s of the step before, here 4.5) to bucket 0's start the link idles
  // 2.5 s, more than the 0.5 s the allowance holds: bucket 0 takes 1.5 s. Bucket 1 queues behind
  // it, so the link never idled between them: it takes its full 1 s.
  EXPECT_NEAR(s.bucket_start[0], 2.0, 1e-9);
  EXPECT_NEAR(s.bucket_end[0], 3.5, 1e-9);
  EXPECT_NEAR(s.bucket_start[1], 3.5, 1e-9);
  EXPECT_NEAR(s.bucket_end[1], 4.5, 1e-9);
  EXPECT_NEAR(s.period, 5.0, 1e-9);

  // Only the network transfer passes at once: bucket 0 has 0.2 s of it, bucket 1 none.
  in.bucket_burstable = {0.2, 0.0};
  s = simulate_steps(in);
  EXPECT_NEAR(s.bucket_end[0], 3.8, 1e-9);
  EXPECT_NEAR(s.bucket_end[1], 4.8, 1e-9);
  EXPECT_NEAR(s.period, 5.3, 1e-9);

  // A link that idles less than the allowance holds passes only what it refilled: buckets of 4 s
  // and 1 s, all of it network transfer, and an allowance of 10 s. Bucket 1 ends at 4.5 s, the
  // update at 5 s, and the next bucket 0 starts 2 s into the next step: 2.5 s of idling, so
  // bucket 0 takes 4 - 2.5 s, and bucket 1, queued behind it, all of its 1 s.
  in.bucket_seconds = {4.0, 1.0};
  in.bucket_burstable = {4.0, 1.0};
  in.burst = 10.0;
  s = simulate_steps(in);
  EXPECT_NEAR(s.bucket_end[0], 3.5, 1e-9);
  EXPECT_NEAR(s.bucket_end[1], 4.5, 1e-9);
  EXPECT_NEAR(s.period, 5.0, 1e-9);
}

TEST(StepSimulation, DoubleBufferingOverlapsTheNextStep) {
  SimInput in = two_buckets();
  in.double_buffering = true;
  const SimStep s = simulate_steps(in);
  // The update waits for the previous step's buckets only; 3 s of communication fit in the
  // 3.5 s of a step.
  EXPECT_DOUBLE_EQ(s.update_start, s.backward_end);
  EXPECT_DOUBLE_EQ(s.period, 3.5);
  in.bucket_seconds = {4.0, 2.0};  // 6 s of communication per step: it sets the pace
  EXPECT_DOUBLE_EQ(simulate_steps(in).period, 6.0);
}

// Eight equal convolutions: a backward long enough for several buckets to overlap it.
Workload eight_convolutions() {
  std::vector<LayerSummary> layers;
  for (int i = 0; i < 8; ++i) {
    std::string name = "c";  // appended, not "c" + ...: GCC 12's -Wrestrict misfires on that
    name += std::to_string(i);
    layers.push_back(testing::layer(name, "conv2d", 300000, 2e8, 4096));
  }
  return workload_from_layers(layers);
}

TEST(StepModel, OverlapSharesOfTheProfileSlowOverlappedWork) {
  const Workload w = eight_convolutions();
  Profile p = testing::test_profile(4, 1e-6, 1e9);
  RunConfig c;
  c.workers = 4;
  const StepPrediction alone = predict_step(w, p, c);
  p.node.overlap = OverlapProfile{testing::q(0.5), testing::q(0.5)};
  const StepPrediction shared = predict_step(w, p, c);
  EXPECT_GT(shared.step, alone.step);
  EXPECT_GT(shared.phases.backward, alone.phases.backward);  // backward slowed beside the buckets
  EXPECT_DOUBLE_EQ(shared.phases.forward, alone.phases.forward);
  EXPECT_NEAR(shared.phases.total(), shared.step, 1e-9 * shared.step);
  // One worker never communicates: the shares do not apply.
  c.workers = 1;
  EXPECT_DOUBLE_EQ(predict_step(w, p, c).step, predict_step(w, testing::test_profile(4, 1e-6, 1e9), c).step);
}

TEST(StepModel, MpiUsesTheOverlapMeasuredBesideMpiAllreduce) {
  // The MPI library's blocking allreduce polls for as long as it lasts: where the profile measured
  // compute beside it, `mpi` steps take those shares and every other algorithm the node's.
  const Workload w = eight_convolutions();
  Profile p = testing::test_profile(4, 1e-6, 1e9);
  p.node.overlap = OverlapProfile{testing::q(0.9), testing::q(0.9)};
  p.mpi_allreduce = MeasuredAllreduce{2, {{4096, 1e-5}, {static_cast<double>(64 << 20), 6e-2}}, "test", std::nullopt};
  RunConfig c;
  c.workers = 2;
  c.algorithm = comm::Algorithm::kMpi;
  for (bool db : {false, true}) {
    c.double_buffering = db;
    c.algorithm = comm::Algorithm::kMpi;
    const StepPrediction node_shares = predict_step(w, p, c);
    Profile polled = p;
    polled.mpi_allreduce->overlap = OverlapProfile{testing::q(0.5), testing::q(0.5)};
    const StepPrediction mpi_shares = predict_step(w, polled, c);
    EXPECT_GT(mpi_shares.step, node_shares.step) << "double buffering " << db;
    EXPECT_GT(mpi_shares.phases.backward, node_shares.phases.backward) << "double buffering " << db;
    // The same as node shares of 0.5: nothing else changed.
    Profile as_node = p;
    as_node.node.overlap = polled.mpi_allreduce->overlap;
    EXPECT_DOUBLE_EQ(mpi_shares.step, predict_step(w, as_node, c).step) << "double buffering " << db;
    // Ring keeps the node's shares; so does mpi at a worker count the ladder was not timed for.
    c.algorithm = comm::Algorithm::kRing;
    EXPECT_DOUBLE_EQ(predict_step(w, polled, c).step, predict_step(w, p, c).step) << "double buffering " << db;
    c.algorithm = comm::Algorithm::kMpi;
    c.workers = 4;
    EXPECT_DOUBLE_EQ(predict_step(w, polled, c).step, predict_step(w, p, c).step) << "double buffering " << db;
    c.workers = 2;
  }
}

TEST(StepModel, CommunicationKeepsTheCpuTimeComputeGivesUp) {
  // Calibrated beside back-to-back exchanges, communication may keep 1% of its rate while compute
  // keeps 76%: the model gives communication at least the 24% compute loses (step_model.cpp).
  const Workload w = eight_convolutions();
  Profile starved = testing::test_profile(4, 1e-6, 1e9), conserving = starved;
  starved.node.overlap = OverlapProfile{testing::q(0.76), testing::q(0.01)};
  conserving.node.overlap = OverlapProfile{testing::q(0.76), testing::q(0.24)};
  RunConfig c;
  c.workers = 2;
  for (bool db : {false, true}) {
    c.double_buffering = db;
    const StepPrediction a = predict_step(w, starved, c), b = predict_step(w, conserving, c);
    EXPECT_DOUBLE_EQ(a.step, b.step) << "double buffering " << db;
    // A share above 1 - compute's is the profile's own.
    Profile faster = conserving;
    faster.node.overlap->comm = testing::q(0.6);
    EXPECT_LT(predict_step(w, faster, c).step, b.step) << "double buffering " << db;
  }
}

}  // namespace
}  // namespace dtrain::perf
