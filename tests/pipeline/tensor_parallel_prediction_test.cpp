// dtrain predict --tensor-parallel's arithmetic (perfmodel/tensor_parallel_cost.h): a split
// layer's share of the FLOPs and parameters, and exactly the collectives its header states (none
// for dL/dx before the first layer with parameters), priced in each pipeline stage.
#include <gtest/gtest.h>

#include <algorithm>

#include "core/error.h"
#include "core/random.h"
#include "nn/models/models.h"
#include "nn/sequential.h"
#include "perfmodel/allreduce_time.h"
#include "perfmodel/layer_cost.h"
#include "perfmodel/pipeline_prediction.h"
#include "perfmodel/straggler.h"
#include "perfmodel/tensor_parallel_cost.h"
#include "tensorparallel/parallelize.h"

namespace dtrain::perf {
namespace {

using tensorparallel::TensorSplit;

const TensorParallelLayer& layer_named(const std::vector<TensorParallelLayer>& layers, const std::string& path) {
  for (const TensorParallelLayer& l : layers)
    if (l.part.path == path) return l;
  throw std::runtime_error("no layer " + path);
}

TEST(TensorParallelCost, AnMlpPairsF1AndF2AndGathersF3WithTheStatedCollectives) {
  const Workload w = describe_zoo_model("mlp", "fashion-mnist");
  const Profile profile = load_profile("2xa100-nvlink3");
  constexpr std::int64_t kRows = 32;
  const auto layers = split_layers(w.layers, 2, kRows, profile, false);
  const auto& f1 = layer_named(layers, "f1");
  const auto& f2 = layer_named(layers, "f2");
  const auto& f3 = layer_named(layers, "f3");
  EXPECT_EQ(f1.split, TensorSplit::kColumn);
  EXPECT_EQ(f2.split, TensorSplit::kRow);
  EXPECT_EQ(f3.split, TensorSplit::kColumnGathered);
  EXPECT_EQ(layer_named(layers, "relu1").split, TensorSplit::kWhole);
  EXPECT_EQ(layer_named(layers, "relu1").part.output, Shape({256}));  // between the pair: O / T features
  EXPECT_EQ(layer_named(layers, "relu2").part.output, Shape({512}));  // after the row layer's sum: whole
  EXPECT_EQ(f1.part.output, Shape({256}));
  EXPECT_EQ(f2.part.input, Shape({256}));
  EXPECT_DOUBLE_EQ(f1.part.forward_flops, 784.0 * 512);  // 2 * I * O / 2
  EXPECT_EQ(f1.part.params, (784 * 512 + 512) / 2);
  // f1 is fed the data: no dL/dx, so no backward allreduce; nothing forward (no gather).
  EXPECT_EQ(f1.forward_comm_s, 0.0);
  EXPECT_EQ(f1.backward_comm_s, 0.0);
  // f2 (row): one allreduce of N x O forward; f3: an allgather of N x O/T per rank forward and
  // an allreduce of N x I backward.
  // Each with the local copies of regions.cpp, at the calibrated gradient copy per element: the
  // row layer's sum copied for the allreduce and again for the bias, its bias gradient's column
  // sums read; the gathered layer's own block and the rebuilt output forward, its block of the
  // gradient sliced out and dL/dx copied for the allreduce backward.
  const double copy = profile.device.gradient_copy_seconds();
  const AllreducePlan ring{comm::Algorithm::kRing, 2};
  EXPECT_DOUBLE_EQ(f2.forward_comm_s, allreduce_time(ring, kRows * 512, profile).seconds + 2.0 * kRows * 512 * copy);
  EXPECT_DOUBLE_EQ(f2.backward_comm_s, 0.5 * kRows * 512 * copy);
  EXPECT_DOUBLE_EQ(f3.forward_comm_bytes, 4.0 * kRows * 5);
  EXPECT_DOUBLE_EQ(f3.forward_comm_s,
                   allgather_seconds(2, 4.0 * kRows * 5, profile) + (kRows * 5.0 + kRows * 10.0) * copy);
  EXPECT_DOUBLE_EQ(f3.backward_comm_s,
                   allreduce_time(ring, kRows * 512, profile).seconds + (kRows * 512.0 + kRows * 5.0) * copy);
  const LinkProfile& link = profile.node.intra_link;
  EXPECT_DOUBLE_EQ(allgather_seconds(4, 1000, profile), 3 * (link.latency.value + 1000 / link.bandwidth.value));
  // A later pipeline stage's input needs its gradient: f1's column layer then allreduces dL/dx.
  const auto later = split_layers(w.layers, 2, kRows, profile, true);
  EXPECT_DOUBLE_EQ(layer_named(later, "f1").backward_comm_s,
                   allreduce_time(ring, kRows * 784, profile).seconds + kRows * 784.0 * copy);
}

TEST(TensorParallelCost, TheModelSplitsEveryZooChainAsTheRuntimeDoes) {
  for (const std::string model : {"mlp", "lenet", "resnet20", "resnet32"}) {
    const bool cifar = model.starts_with("resnet");
    const ModelInput in = cifar ? ModelInput{3, 32, 32, 10} : ModelInput{1, 28, 28, 10};
    Rng rng(1);
    auto built = make_model(model, in, rng);
    const auto& chain = dynamic_cast<const Sequential&>(*built);
    std::vector<std::string> names;
    for (std::size_t c = 0; c < chain.size(); ++c) names.push_back(chain.layer_name(c));
    const Workload w = describe_model(*built, Shape{in.channels, in.height, in.width}, model);
    for (int t : {2, 4}) {
      const auto runtime = tensorparallel::plan_tensor_split(tensorparallel::split_candidates(chain), t);
      const auto priced = split_parts(w.layers, t, names);
      ASSERT_EQ(priced.size(), w.layers.size());
      for (std::size_t i = 0; i < w.layers.size(); ++i) {
        const std::string& path = w.layers[i].path;
        const auto child = std::find(names.begin(), names.end(), path);
        // A layer that is a child itself splits as the runtime splits that child; a layer inside a
        // child (a residual block's) stays whole, as the block does.
        const TensorSplit want =
            child != names.end() ? runtime[static_cast<std::size_t>(child - names.begin())] : TensorSplit::kWhole;
        EXPECT_EQ(priced[i].first, want) << model << " T=" << t << " " << path;
      }
    }
  }
}

TEST(TensorParallelCost, TheCollectivesStayInsideANode) {
  const Workload w = describe_zoo_model("mlp", "fashion-mnist");
  EXPECT_THROW(split_layers(w.layers, 4, 16, load_profile("2xa100-nvlink3"), false), InputError);
}

TEST(TensorParallelCost, OneRankSplitsNothing) {
  const Workload w = describe_zoo_model("lenet", "fashion-mnist");
  const Profile profile = load_profile("2xa100-nvlink3");
  for (const TensorParallelLayer& l : split_layers(w.layers, 1, 16, profile, false)) {
    EXPECT_EQ(l.split, TensorSplit::kWhole) << l.part.path;
    EXPECT_EQ(l.forward_comm_s + l.backward_comm_s, 0.0);
  }
}

TEST(TensorParallelCost, AStagesTimeIsItsPartsComputePlusItsCollectives) {
  const Workload w = describe_zoo_model("lenet", "fashion-mnist");
  const Profile profile = load_profile("2xa100-nvlink3");
  PipelineShape shape;
  shape.batch = 64;
  shape.micro_batches = 2;
  shape.stage_layers = {{"c1", "relu1", "pool1", "c2", "relu2", "pool2", "flatten", "f1", "relu3", "f2"}};
  const PipelinePrediction whole = predict_pipeline(w, profile, shape);
  shape.tensor_parallel = 2;
  const PipelinePrediction split = predict_pipeline(w, profile, shape);
  double forward = 0, backward = 0, comm = 0;
  std::int64_t params = 0;
  for (const TensorParallelLayer& l : split_layers(w.layers, 2, 32, profile, false)) {
    const LayerTime t = layer_time(l.part, 32, profile.device);
    forward += t.forward.seconds + l.forward_comm_s;
    backward += t.backward.seconds + l.backward_comm_s;
    comm += l.forward_comm_s + l.backward_comm_s;
    params += l.part.params;
  }
  EXPECT_DOUBLE_EQ(split.stages[0].forward_s, forward);
  // The second of two micro-batches adds its gradients (a rank's share) into the first's.
  EXPECT_DOUBLE_EQ(split.stages[0].backward_s,
                   backward + 0.5 * gradient_accumulation_seconds(static_cast<double>(params), profile.device));
  EXPECT_DOUBLE_EQ(split.tensor_comm_s[0], comm);
  EXPECT_GT(comm, 0.0);
  EXPECT_EQ(whole.tensor_comm_s[0], 0.0);
  // Each rank updates its share: every lenet layer with parameters splits over 2.
  EXPECT_DOUBLE_EQ(split.update_s[0], static_cast<double>(params) / profile.device.update.value);
  EXPECT_LT(split.update_s[0], whole.update_s[0]);
  // The step waits for the slower of the two ranks (this profile's GPUs share no CPUs).
  EXPECT_DOUBLE_EQ(split.tensor_sync_s, straggler_wait(2 * (split.stages[0].forward_s + split.stages[0].backward_s),
                                                       profile.device.variation(), 2));
  EXPECT_DOUBLE_EQ(split.step_s, split.clock.step_s + split.update_s[0] + split.tensor_sync_s);
  EXPECT_EQ(whole.tensor_sync_s, 0.0);
}

}  // namespace
}  // namespace dtrain::perf
