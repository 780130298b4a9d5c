// What the model predicts for: ResNet-50 as torchvision builds it, the layer and parameter lists,
// the datasets.
#include "perfmodel/workload.h"

#include <gtest/gtest.h>

#include "core/error.h"
#include "core/random.h"
#include "nn/models/models.h"
#include "perfmodel_test_util.h"

namespace dtrain::perf {
namespace {

const Workload& resnet50() {
  static const Workload w = describe_zoo_model("resnet50", "imagenet");
  return w;
}

TEST(Workload, ResNet50HasTorchvisionsParametersAndFlops) {
  const Workload& w = resnet50();
  EXPECT_EQ(w.total_params(), 25557032);  // torchvision.models.resnet50()
  EXPECT_EQ(w.params.size(), 161u);
  EXPECT_EQ(w.params.front().name, "conv1.weight");
  EXPECT_EQ(w.params.back().name, "fc.bias");
  bool downsample = false;
  for (const ParameterInfo& p : w.params) downsample |= p.name == "layer2.0.downsample.0.weight";
  EXPECT_TRUE(downsample);
  // 4.1 GMAC forward in convolutions and the classifier (torchvision: 4.09 G), two FLOPs each.
  double conv_linear = 0;
  for (const LayerSummary& l : w.layers) {
    if (l.kind == "conv2d" || l.kind == "linear") conv_linear += l.forward_flops;
  }
  EXPECT_NEAR(conv_linear / 2e9, 4.1, 0.05);
  EXPECT_EQ(w.layers.back().output, Shape{1000});
  EXPECT_DOUBLE_EQ(w.sample_bytes(), 4.0 * 3 * 224 * 224);
}

TEST(Workload, EveryParameterBelongsToTheLayerThatRunsIt) {
  for (const ParameterInfo& p : resnet50().params) {
    ASSERT_LT(p.layer, resnet50().layers.size()) << p.name;
    EXPECT_EQ(p.name.rfind(resnet50().layers[p.layer].path + ".", 0), 0u) << p.name;
  }
  // The residual additions are layers of their own (their traffic counts).
  int adds = 0;
  for (const LayerSummary& l : resnet50().layers) adds += l.kind == "add";
  EXPECT_EQ(adds, 16);
}

TEST(Workload, FromLayersAloneOneTensorPerLayer) {
  const Workload w = workload_from_layers(
      {testing::layer("a", "linear", 10, 1), testing::layer("r", "relu", 0, 1), testing::layer("a", "linear", 10, 1)});
  ASSERT_EQ(w.params.size(), 1u);  // the second call of "a" shares its parameters
  EXPECT_EQ(w.params[0].layer, 0u);
  EXPECT_EQ(w.total_params(), 10);
}

TEST(Workload, DatasetsAndUnknownNames) {
  EXPECT_EQ(dataset_info("imagenet").train_samples, 1281167);
  EXPECT_DOUBLE_EQ(dataset_info("imagenet").disk_bytes_per_sample, 110e3);
  EXPECT_EQ(dataset_info("cifar10").channels, 3);
  try {
    dataset_info("coco");
    FAIL();
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("unknown dataset 'coco' for prediction; valid: imagenet, cifar10, "
                                         "fashion-mnist, mnist"),
              std::string::npos);
  }
  try {
    describe_zoo_model("vgg16", "imagenet");
    FAIL();
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("unknown model 'vgg16'; valid: mlp, lenet, resnet20"), std::string::npos);
  }
}

TEST(Workload, ResNet50TrainsOnSmallImages) {
  // The model is also usable for training (a 32x32 forward and backward runs).
  Rng rng(1);
  auto m = make_model("resnet50", {3, 32, 32, 10}, rng);
  Variable y = (*m)(Variable(Tensor::zeros({2, 3, 32, 32})));
  EXPECT_EQ(y.shape(), (Shape{2, 10}));
}

}  // namespace
}  // namespace dtrain::perf
