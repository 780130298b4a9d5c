#include "nn/models/models.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "autograd/ops.h"
#include "nn/init.h"

namespace dtrain {
namespace {

TEST(Models, ParameterCountsMatchTheReferenceWorkloads) {
  Rng rng(0);
  // Counts of shared/peers/models.py (PyTorch), and of the CIFAR ResNets of He et al.
  EXPECT_EQ(make_model("mlp", {1, 28, 28, 10}, rng)->num_parameters(), 669706);
  EXPECT_EQ(make_model("lenet", {1, 28, 28, 10}, rng)->num_parameters(), 3274634);
  EXPECT_EQ(make_model("resnet20", {3, 32, 32, 10}, rng)->num_parameters(), 272474);
  EXPECT_EQ(make_model("resnet20", {1, 28, 28, 10}, rng)->num_parameters(), 272186);
  EXPECT_EQ(make_model("resnet32", {3, 32, 32, 10}, rng)->num_parameters(), 466906);
  EXPECT_EQ(make_model("resnet56", {3, 32, 32, 10}, rng)->num_parameters(), 855770);
}

TEST(Models, UnknownModelListsValidNames) {
  Rng rng(0);
  try {
    make_model("vgg16", {}, rng);
    FAIL();
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("mlp, lenet, resnet20, resnet32, resnet56"), std::string::npos);
  }
}

TEST(Models, WrongInputShapeNamesBothShapes) {
  Rng rng(0);
  auto m = make_model("lenet", {1, 28, 28, 10}, rng);
  try {
    (*m)(Variable(Tensor::zeros({2, 3, 28, 28})));
    FAIL();
  } catch (const ShapeError& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("[2, 3, 28, 28]"), std::string::npos) << msg;
    EXPECT_NE(msg.find("[N, 1, H, W]"), std::string::npos) << msg;
  }
}

TEST(Models, EvalUsesRunningStatistics) {
  Rng rng(1);
  auto m = make_model("resnet20", {1, 28, 28, 10}, rng);
  Tensor x = Tensor::full({2, 1, 28, 28}, 0.5);
  m->eval();
  NoGradGuard ng;
  const auto a = (*m)(Variable(x)).data().to_vector();
  const auto b = (*m)(Variable(x)).data().to_vector();
  EXPECT_EQ(a, b);
  for (auto& [name, buf] : m->named_buffers()) {
    if (name.ends_with("running_mean")) {
      for (float v : buf.to_vector()) EXPECT_EQ(v, 0.0f) << name << " changed in eval mode";
    }
  }
}

}  // namespace
}  // namespace dtrain

namespace dtrain {
namespace {

// Zero-gamma (Goyal et al.): the last batch norm of each residual branch, and only those.
TEST(Models, ZeroGammaZeroesEachResidualBranchsLastScale) {
  Rng rng(0);
  for (const auto& [name, blocks] : std::vector<std::pair<std::string, std::int64_t>>{{"resnet20", 9}, {"lenet", 0}}) {
    auto model = make_model(name, {1, 28, 28, 10}, rng);
    EXPECT_EQ(init::zero_residual_gammas(*model), blocks) << name;
    std::int64_t zero = 0, one = 0;
    for (const auto& [path, p] : model->named_parameters()) {
      if (path.size() < 7 || path.substr(path.size() - 7) != ".weight" || p.data().shape().rank() != 1) continue;
      const auto v = p.data().to_vector();
      const bool all_zero = std::all_of(v.begin(), v.end(), [](float x) { return x == 0; });
      (all_zero ? zero : one) += 1;
      if (all_zero) {
        EXPECT_NE(path.find(".b2.weight"), std::string::npos) << path;
      }
    }
    EXPECT_EQ(zero, blocks) << name;
    if (blocks > 0) {
      EXPECT_GT(one, blocks) << "the other batch norms keep scale 1";
    }
  }
  Rng rng50(0);
  auto resnet50 = make_model("resnet50", {3, 224, 224, 1000}, rng50);
  EXPECT_EQ(init::zero_residual_gammas(*resnet50), 16) << "one per bottleneck (bn3)";
}

}  // namespace
}  // namespace dtrain
