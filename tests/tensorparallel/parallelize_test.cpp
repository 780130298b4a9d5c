// The tensor-parallel split rule (plan.h) on the zoo's chains, and parallelize() of mlp and lenet
// at T = 2 and 4 on the local-threads transport: each rank's copy gives the whole model's output
// and loss, and every parameter's gradient is the rank's block of the whole model's gradient.
#include "tensorparallel/parallelize.h"

#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <mutex>

#include "autograd/ops.h"
#include "comm/local_transport.h"
#include "core/random.h"
#include "core/threads.h"
#include "nn/models/models.h"
#include "tensorparallel/expect_close.h"
#include "tensorparallel/regions.h"

namespace dtrain::tensorparallel {
namespace {

std::vector<std::string> planned(const std::string& model, const ModelInput& in, int parts) {
  Rng rng(1);
  auto m = make_model(model, in, rng);
  const auto& chain = dynamic_cast<const Sequential&>(*m);
  const auto plan = plan_tensor_split(split_candidates(chain), parts);
  std::vector<std::string> out;
  for (std::size_t i = 0; i < chain.size(); ++i)
    if (plan[i] != TensorSplit::kWhole) out.push_back(chain.layer_name(i) + ":" + split_name(plan[i]));
  return out;
}

TEST(TensorParallelPlan, PairsLinearLayersAcrossActivationsAndSplitsConvolutionsByChannel) {
  const ModelInput mnist{1, 28, 28, 10}, cifar{3, 32, 32, 10};
  EXPECT_EQ(planned("mlp", mnist, 2), (std::vector<std::string>{"f1:column", "f2:row", "f3:column+gather"}));
  // 10 classes do not split over 4: f3 stays whole.
  EXPECT_EQ(planned("mlp", mnist, 4), (std::vector<std::string>{"f1:column", "f2:row"}));
  EXPECT_EQ(planned("lenet", mnist, 2), (std::vector<std::string>{"c1:channel", "c2:channel", "f1:column", "f2:row"}));
  // The residual blocks are composite layers and stay whole.
  EXPECT_EQ(planned("resnet20", cifar, 2), (std::vector<std::string>{"c:channel", "fc:column+gather"}));
  EXPECT_TRUE(planned("mlp", mnist, 1).empty());
}

TEST(TensorParallelPlan, ALinearLayerNotFollowedByALinearOneIsGathered) {
  const std::vector<SplitCandidate> layers{{"linear", 8, 16}, {"max_pool"}, {"linear", 16, 4}, {"relu"}};
  EXPECT_EQ(plan_tensor_split(layers, 2),
            (std::vector<TensorSplit>{TensorSplit::kColumnGathered, TensorSplit::kWhole, TensorSplit::kColumnGathered,
                                      TensorSplit::kWhole}));
  // Three linear layers in a row: the first two pair, the third is on its own.
  const std::vector<SplitCandidate> three{{"linear", 8, 16}, {"linear", 16, 16}, {"tanh"}, {"linear", 16, 8}};
  EXPECT_EQ(plan_tensor_split(three, 4), (std::vector<TensorSplit>{TensorSplit::kColumn, TensorSplit::kRow,
                                                                   TensorSplit::kWhole, TensorSplit::kColumnGathered}));
}

Tensor random_input(const Shape& shape, std::uint64_t seed) {
  Rng rng(seed);
  std::vector<float> v(static_cast<std::size_t>(shape.numel()));
  for (float& x : v) x = static_cast<float>(rng.uniform(0, 1));
  return Tensor::from_vector(v, shape);
}

void expect_parallel_equals_whole(const std::string& model) {
  const ModelInput in{1, 28, 28, 10};
  const Tensor x = random_input({4, 1, 28, 28}, 9);
  const Tensor labels = Tensor::from_labels({1, 7, 3, 0});
  Rng rng(2);
  auto whole = make_model(model, in, rng);
  Variable want = ops::softmax_cross_entropy((*whole)(Variable(x)), labels);
  want.backward();
  std::map<std::string, Tensor> whole_grads;
  for (const auto& [name, p] : whole->named_parameters()) whole_grads[name] = p.grad().to_plain().clone();
  for (int t : {2, 4}) {
    std::mutex mu;
    comm::run_local_transports(t, [&](comm::Transport& base) {
      set_num_threads(1);
      comm::Communicator c(base);
      Rng same(2);  // every rank builds the same whole model
      auto mine = make_model(model, in, same);
      auto parallel = parallelize(dynamic_cast<const Sequential&>(*mine), c);
      Variable loss = ops::softmax_cross_entropy((*parallel)(Variable(x)), labels);
      loss.backward();
      const std::lock_guard lock(mu);
      expect_close(loss.data(), want.data(), model + " loss");
      for (const auto& [name, p] : parallel->named_parameters())
        expect_close(p.grad(), part_of(whole_grads.at(name), p.shape(), c.rank(), t),
                     fmt::format("{} {} at T = {}", model, name, t));
    });
  }
}

TEST(Parallelize, AnMlpSplitOverTwoAndFourRanksEqualsTheWholeMlp) { expect_parallel_equals_whole("mlp"); }

TEST(Parallelize, ALenetSplitOverTwoAndFourRanksEqualsTheWholeLenet) { expect_parallel_equals_whole("lenet"); }

}  // namespace
}  // namespace dtrain::tensorparallel
