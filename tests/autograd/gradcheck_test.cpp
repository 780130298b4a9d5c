// Double-precision finite-difference gradient checks of every op (reference kernels, f64).
#include "autograd/gradcheck.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "autograd/ops.h"
#include "core/error.h"
#include "test_util.h"

namespace dtrain {
namespace {

using testing::random_var;
using Inputs = std::vector<Variable>;

void expect_gradcheck(const std::function<Variable(const Inputs&)>& f, const Inputs& inputs) {
  GradcheckResult r = gradcheck(f, inputs);
  EXPECT_TRUE(r.ok) << "max abs error " << r.max_abs_error << " at " << r.worst;
}

TEST(Gradcheck, AddMulScale) {
  expect_gradcheck([](const Inputs& v) { return ops::add(v[0], v[1]); },
                   {random_var({2, 3}, 1), random_var({2, 3}, 2)});
  expect_gradcheck([](const Inputs& v) { return ops::mul(v[0], v[1]); },
                   {random_var({2, 3}, 3), random_var({2, 3}, 4)});
  expect_gradcheck([](const Inputs& v) { return ops::scale(v[0], -2.5); }, {random_var({4}, 5)});
}

TEST(Gradcheck, VariableUsedTwiceAccumulates) {
  expect_gradcheck([](const Inputs& v) { return ops::mul(v[0], ops::add(v[0], v[1])); },
                   {random_var({3, 2}, 6), random_var({3, 2}, 7)});
}

TEST(Gradcheck, Relu) {
  expect_gradcheck([](const Inputs& v) { return ops::relu(v[0]); }, {random_var({2, 16, 3, 3}, 8)});
}

TEST(Gradcheck, Dropout) {
  expect_gradcheck([](const Inputs& v) { return ops::dropout(v[0], 0.3, 42); }, {random_var({5, 7}, 9)});
}

TEST(Gradcheck, LinearWithAndWithoutBias) {
  expect_gradcheck([](const Inputs& v) { return ops::linear(v[0], v[1], v[2]); },
                   {random_var({3, 5}, 10), random_var({4, 5}, 11), random_var({4}, 12)});
  expect_gradcheck([](const Inputs& v) { return ops::linear(v[0], v[1], Variable()); },
                   {random_var({2, 3}, 13), random_var({2, 3}, 14)});
}

struct ConvCase {
  std::int64_t n, c, h, w, o, k, stride, pad;
  bool bias;
};

class ConvGradcheck : public ::testing::TestWithParam<ConvCase> {};

TEST_P(ConvGradcheck, MatchesFiniteDifferences) {
  const ConvCase p = GetParam();
  Conv2dGeometry g;
  g.stride_h = g.stride_w = p.stride;
  g.pad_h = g.pad_w = p.pad;
  Inputs in{random_var({p.n, p.c, p.h, p.w}, 20), random_var({p.o, p.c, p.k, p.k}, 21)};
  if (p.bias) in.push_back(random_var({p.o}, 22));
  expect_gradcheck([&](const Inputs& v) { return ops::conv2d(v[0], v[1], v.size() > 2 ? v[2] : Variable(), g); }, in);
}

INSTANTIATE_TEST_SUITE_P(Shapes, ConvGradcheck,
                         ::testing::Values(ConvCase{2, 2, 5, 5, 3, 3, 1, 1, true},
                                           ConvCase{1, 3, 6, 5, 2, 3, 2, 1, false},
                                           ConvCase{2, 1, 5, 5, 2, 5, 1, 2, true},
                                           ConvCase{1, 2, 4, 4, 3, 1, 2, 0, false}));

TEST(Gradcheck, MaxAndAvgPool) {
  Pool2dGeometry g;  // 2x2 stride 2
  expect_gradcheck([&](const Inputs& v) { return ops::max_pool2d(v[0], g); }, {random_var({2, 2, 4, 6}, 30)});
  expect_gradcheck([&](const Inputs& v) { return ops::avg_pool2d(v[0], g); }, {random_var({2, 2, 4, 6}, 31)});
  Pool2dGeometry padded{3, 3, 2, 2, 1, 1};
  expect_gradcheck([&](const Inputs& v) { return ops::max_pool2d(v[0], padded); }, {random_var({1, 2, 5, 5}, 32)});
  expect_gradcheck([&](const Inputs& v) { return ops::avg_pool2d(v[0], padded); }, {random_var({1, 2, 5, 5}, 33)});
  expect_gradcheck([&](const Inputs& v) { return ops::global_avg_pool2d(v[0]); }, {random_var({2, 3, 3, 4}, 34)});
}

TEST(Gradcheck, BatchNormTraining) {
  for (const Shape& s : {Shape{4, 3, 2, 3}, Shape{6, 5}}) {
    ops::BatchNormState st;
    st.running_mean = Tensor::zeros({s[1]}, DType::kF64);
    st.running_var = Tensor::full({s[1]}, 1.0, DType::kF64);
    expect_gradcheck([&](const Inputs& v) { return ops::batch_norm(v[0], v[1], v[2], st, true); },
                     {random_var(s, 40), random_var({s[1]}, 41, 0.5, 1.5), random_var({s[1]}, 42)});
  }
}

// Ghost batch norm: groups of 2 of a batch of 6, each normalised by itself (ops/norm.h).
TEST(Gradcheck, GhostBatchNormTraining) {
  for (const Shape& s : {Shape{6, 3, 2, 2}, Shape{6, 4}}) {
    ops::BatchNormState st;
    st.running_mean = Tensor::zeros({s[1]}, DType::kF64);
    st.running_var = Tensor::full({s[1]}, 1.0, DType::kF64);
    st.group = 2;
    expect_gradcheck([&](const Inputs& v) { return ops::batch_norm(v[0], v[1], v[2], st, true); },
                     {random_var(s, 43), random_var({s[1]}, 44, 0.5, 1.5), random_var({s[1]}, 45)});
  }
}

// Synchronized batch norm's own path on one rank (its correction is then 0); several ranks are
// compared with one process in tests/parallel/sync_batch_norm_test.cpp.
TEST(Gradcheck, SyncBatchNormOneRank) {
  ops::BatchNormState st;
  st.running_mean = Tensor::zeros({3}, DType::kF64);
  st.running_var = Tensor::full({3}, 1.0, DType::kF64);
  st.sync = [](std::vector<double>&) {};
  expect_gradcheck([&](const Inputs& v) { return ops::batch_norm(v[0], v[1], v[2], st, true); },
                   {random_var({4, 3, 2, 2}, 46), random_var({3}, 47, 0.5, 1.5), random_var({3}, 48)});
}

TEST(Gradcheck, SoftmaxCrossEntropy) {
  const Tensor labels = Tensor::from_labels({2, 0, 4});
  expect_gradcheck([&](const Inputs& v) { return ops::softmax_cross_entropy(v[0], labels); },
                   {random_var({3, 5}, 50, -3, 3)});
  // Label smoothing (backend.h): the loss against (1 - s) onehot + s / K.
  expect_gradcheck([&](const Inputs& v) { return ops::softmax_cross_entropy(v[0], labels, 0.1); },
                   {random_var({3, 5}, 51, -3, 3)});
}

TEST(Gradcheck, FlattenReshape) {
  expect_gradcheck([](const Inputs& v) { return ops::flatten(ops::relu(v[0])); }, {random_var({2, 3, 2, 2}, 60)});
  expect_gradcheck([](const Inputs& v) { return ops::reshape(v[0], {4, 3}); }, {random_var({2, 6}, 61)});
}

TEST(Gradcheck, ResidualBlockComposite) {
  Conv2dGeometry g{1, 1, 1, 1};
  ops::BatchNormState st;
  st.running_mean = Tensor::zeros({2}, DType::kF64);
  st.running_var = Tensor::full({2}, 1.0, DType::kF64);
  expect_gradcheck(
      [&](const Inputs& v) {
        Variable o = ops::relu(ops::batch_norm(ops::conv2d(v[0], v[1], Variable(), g), v[2], v[3], st, true));
        return ops::relu(ops::add(o, v[0]));
      },
      {random_var({3, 2, 4, 4}, 70), random_var({2, 2, 3, 3}, 71), random_var({2}, 72, 0.5, 1.5), random_var({2}, 73)});
}

}  // namespace
}  // namespace dtrain

namespace dtrain {
namespace {

// The smoothed loss by hand: logits (2, 0), label 0, s = 0.2, K = 2:
// 0.8 (log(e^2 + 1) - 2) + 0.2 (log(e^2 + 1) - 1); s outside [0, 1) is an error.
TEST(LabelSmoothing, LossByHandAndBadValues) {
  const Variable z(Tensor::from_vector(std::vector<float>{2, 0}, {1, 2}), true);
  const double log_sum = std::log(std::exp(2.0) + 1);
  EXPECT_NEAR(ops::softmax_cross_entropy(z, Tensor::from_labels({0}), 0.2).data().item(),
              0.8 * (log_sum - 2) + 0.2 * (log_sum - 1), 1e-6);
  EXPECT_NEAR(ops::softmax_cross_entropy(z, Tensor::from_labels({0})).data().item(), log_sum - 2, 1e-6);
  EXPECT_THROW(ops::softmax_cross_entropy(z, Tensor::from_labels({0}), 1.0), InputError);
  EXPECT_THROW(ops::softmax_cross_entropy(z, Tensor::from_labels({0}), -0.1), InputError);
}

}  // namespace
}  // namespace dtrain
