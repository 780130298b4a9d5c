// dtrain predict --pipeline's arithmetic (perfmodel/pipeline_prediction.h): each stage is the
// sum of its layers' roofline times, each boundary one micro-batch's activations over the
// intra-node link, the step the schedule's clock plus the slowest stage's update.
#include "perfmodel/pipeline_prediction.h"

#include <gtest/gtest.h>

#include "core/error.h"
#include "perfmodel/allreduce_time.h"
#include "perfmodel/layer_cost.h"

namespace dtrain::perf {
namespace {

PipelineShape mlp_in_two(int m) {
  PipelineShape shape;
  shape.micro_batches = m;
  shape.batch = 64;
  shape.stage_layers = {{"flatten", "f1", "relu1"}, {"f2", "relu2", "f3"}};
  return shape;
}

TEST(PipelinePrediction, StagesAreTheirLayersAndTheStepIsTheClockPlusTheSlowestUpdate) {
  const Workload w = describe_zoo_model("mlp", "fashion-mnist");
  const Profile profile = load_profile("2xa100-nvlink3");
  const PipelinePrediction p = predict_pipeline(w, profile, mlp_in_two(4));
  double f0 = 0, b1 = 0;
  for (const LayerSummary& l : w.layers) {
    const LayerTime t = layer_time(l, 16, profile.device);
    if (l.path == "flatten" || l.path == "f1" || l.path == "relu1") f0 += t.forward.seconds;
    if (l.path == "f2" || l.path == "relu2" || l.path == "f3") b1 += t.backward.seconds;
  }
  EXPECT_DOUBLE_EQ(p.stages[0].forward_s, f0);
  // Three of the four micro-batches add their gradients into the step's (stage 1: f2 and f3).
  const double accumulate = gradient_accumulation_seconds(512.0 * 512 + 512 + 512 * 10 + 10, profile.device);
  EXPECT_DOUBLE_EQ(p.stages[1].backward_s, b1 + 0.75 * accumulate);
  EXPECT_DOUBLE_EQ(accumulate, 1.5 * (512.0 * 512 + 512 + 512 * 10 + 10) * profile.device.gradient_copy_seconds());
  EXPECT_DOUBLE_EQ(p.boundary_bytes[0], 4.0 * 512 * 16);
  const LinkProfile& link = profile.node.intra_link;
  EXPECT_DOUBLE_EQ(p.transfer_s[0], link.latency.value + 4.0 * 512 * 16 / link.one_way());
  const PipelineTiming clock = simulate_pipeline(pipeline::ScheduleKind::kOneFOneB, 4, p.stages, p.transfer_s);
  EXPECT_DOUBLE_EQ(p.step_s, clock.step_s + std::max(p.update_s[0], p.update_s[1]));
  EXPECT_DOUBLE_EQ(p.update_s[0], (784.0 * 512 + 512) / profile.device.update.value);
}

TEST(PipelinePrediction, ReplicasAddEachStagesAllreduceBeforeTheUpdate) {
  const Workload w = describe_zoo_model("mlp", "fashion-mnist");
  const Profile profile = load_profile("2xa100-nvlink3");
  PipelineShape shape = mlp_in_two(4);
  shape.replicas = 2;
  const PipelinePrediction p = predict_pipeline(w, profile, shape);
  // One allreduce per 1 MiB bucket (parallel/buckets.h), each gradient of a bucket it shares with
  // others copied in: stage 0 is f1.weight (1.6 MB, a bucket of its own, adopted) and f1.bias.
  const AllreducePlan ring{comm::Algorithm::kRing, 2};
  EXPECT_DOUBLE_EQ(p.allreduce_s[0],
                   allreduce_time(ring, 784 * 512, profile).seconds + allreduce_time(ring, 512, profile).seconds);
  // Stage 1: f2.weight alone (1 MiB), then f2.bias, f3.weight and f3.bias together, copied in.
  const double small = 512 + 512 * 10 + 10;
  EXPECT_DOUBLE_EQ(p.allreduce_s[1], allreduce_time(ring, 512 * 512, profile).seconds +
                                         allreduce_time(ring, 5642, profile).seconds +
                                         small * profile.device.gradient_copy_seconds());
  EXPECT_DOUBLE_EQ(p.step_s,
                   p.clock.step_s + std::max(p.update_s[0] + p.allreduce_s[0], p.update_s[1] + p.allreduce_s[1]));
  EXPECT_DOUBLE_EQ(p.clock.step_s, predict_pipeline(w, profile, mlp_in_two(4)).clock.step_s);
}

TEST(PipelinePrediction, MoreMicroBatchesShrinkTheBubble) {
  const Workload w = describe_zoo_model("mlp", "fashion-mnist");
  const Profile profile = load_profile("2xa100-nvlink3");
  double previous = 1.0;
  for (int m : {1, 2, 4, 8}) {
    const double bubble = predict_pipeline(w, profile, mlp_in_two(m)).clock.bubble_fraction();
    EXPECT_LT(bubble, previous) << m;
    previous = bubble;
  }
}

TEST(PipelinePrediction, BadShapesNameTheProblem) {
  const Workload w = describe_zoo_model("mlp", "fashion-mnist");
  const Profile profile = load_profile("2xa100-nvlink3");
  EXPECT_THROW(predict_pipeline(w, profile, mlp_in_two(5)), InputError);
  PipelineShape missing = mlp_in_two(2);
  missing.stage_layers[1].pop_back();
  EXPECT_THROW(predict_pipeline(w, profile, missing), InputError);
}

}  // namespace
}  // namespace dtrain::perf
