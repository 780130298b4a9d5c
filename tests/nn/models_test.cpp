#include <gtest/gtest.h>

#include "autograd/ops.h"
#include "nn/models/models.h"

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
