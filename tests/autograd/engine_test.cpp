#include <gtest/gtest.h>

#include "autograd/ops.h"
#include "tensor/kernels/cpu/compute_precision.h"
#include "test_util.h"

namespace dtrain {
namespace {

using testing::random_var;

TEST(Engine, GradientAccumulatesAcrossBackwardPasses) {
  Variable w(Tensor::from_vector(std::vector<double>{1, 2}, {2}), true);
  Variable x(Tensor::from_vector(std::vector<double>{3, 4}, {2}), false);
  auto loss = [&] { return ops::reshape(ops::linear(ops::reshape(x, {1, 2}), ops::reshape(w, {1, 2}), Variable()), {1}); };
  loss().backward();
  EXPECT_EQ(w.grad().to_vector_f64(), (std::vector<double>{3, 4}));
  loss().backward();
  EXPECT_EQ(w.grad().to_vector_f64(), (std::vector<double>{6, 8}));
  w.zero_grad();
  EXPECT_FALSE(w.grad().defined());
}

TEST(Engine, GradReadyHookFiresOnceWithTheFinalGradient) {
  Variable a = random_var({3}, 1);
  Variable b = random_var({3}, 2);
  std::vector<std::string> fired;
  std::vector<double> seen;
  a.add_grad_ready_hook([&](Variable& v) {
    fired.emplace_back("a");
    seen = v.grad().to_vector_f64();
  });
  b.add_grad_ready_hook([&](Variable&) { fired.emplace_back("b"); });
  // a is used twice (through two paths); its hook must wait for both contributions.
  Variable y = ops::add(ops::mul(a, b), ops::scale(a, 3.0));
  y.backward(Tensor::full({3}, 1.0, DType::kF64));
  ASSERT_EQ(fired.size(), 2u);
  const std::vector<double> bv = b.data().to_vector_f64();
  for (int i = 0; i < 3; ++i) EXPECT_DOUBLE_EQ(seen[i], bv[i] + 3.0);
}

TEST(Engine, HooksOfLateLayersFireBeforeEarlyOnes) {
  // In a chain, the last layer's weight gradient is final first: the order a bucketer relies on.
  Variable x = random_var({2, 4}, 3, -1, 1, false);
  Variable w1 = random_var({4, 4}, 4), w2 = random_var({4, 4}, 5), w3 = random_var({2, 4}, 6);
  std::vector<int> order;
  w1.add_grad_ready_hook([&](Variable&) { order.push_back(1); });
  w2.add_grad_ready_hook([&](Variable&) { order.push_back(2); });
  w3.add_grad_ready_hook([&](Variable&) { order.push_back(3); });
  Variable y = ops::linear(ops::relu(ops::linear(ops::relu(ops::linear(x, w1, Variable())), w2, Variable())), w3,
                           Variable());
  ops::softmax_cross_entropy(y, Tensor::from_labels({0, 1})).backward();
  EXPECT_EQ(order, (std::vector<int>{3, 2, 1}));
}

TEST(Engine, HookKnowsWhetherItsGradientIsSharedWithOtherEdges) {
  // add hands one gradient tensor to both inputs: neither leaf may write into it, the other
  // still reads it. A weight's gradient from linear is its own: a hook may take it over.
  Variable a = random_var({3}, 1), b = random_var({3}, 2);
  std::vector<bool> unshared;
  const auto record = [&](Variable& v) { unshared.push_back(v.grad().storage_unshared()); };
  a.add_grad_ready_hook(record);
  b.add_grad_ready_hook(record);
  ops::add(a, b).backward(Tensor::full({3}, 1.0, DType::kF64));
  EXPECT_EQ(unshared, (std::vector<bool>{false, false}));

  Variable x = random_var({2, 4}, 3, -1, 1, false);
  Variable w = random_var({2, 4}, 4);
  bool weight_unshared = false;
  w.add_grad_ready_hook([&](Variable& v) { weight_unshared = v.grad().storage_unshared(); });
  ops::softmax_cross_entropy(ops::linear(x, w, Variable()), Tensor::from_labels({0, 1})).backward();
  EXPECT_TRUE(weight_unshared);
}

TEST(Engine, GradientDestinationReceivesTheFirstGradientOfAPass) {
  Variable x = random_var({3, 4}, 8, -1, 1, false);
  Variable w = random_var({2, 4}, 9);
  const auto loss = [&] {
    return ops::softmax_cross_entropy(ops::linear(x, w, Variable()), Tensor::from_labels({0, 1, 1}));
  };
  loss().backward();
  const std::vector<double> want = w.grad().to_vector_f64();
  w.zero_grad();

  Tensor slot = Tensor::zeros({2, 4}, DType::kF64);
  w.set_grad_destination(slot);
  loss().backward();
  EXPECT_NE(w.grad().raw_data(), slot.raw_data()) << "only plain f32 destinations are used";

  Variable xf(x.data().to(DType::kF32), false), wf(w.data().to(DType::kF32), true);
  Tensor slot32 = Tensor::zeros({2, 4});
  wf.set_grad_destination(slot32);
  const auto loss32 = [&] {
    return ops::softmax_cross_entropy(ops::linear(xf, wf, Variable()), Tensor::from_labels({0, 1, 1}));
  };
  loss32().backward();
  EXPECT_EQ(wf.grad().raw_data(), slot32.raw_data()) << "the first gradient is written into the destination";
  const std::vector<double> got = slot32.to_vector_f64();
  for (std::size_t i = 0; i < want.size(); ++i) EXPECT_NEAR(got[i], want[i], 1e-5);
  // Accumulating: the second pass adds out of place and leaves the destination as it was.
  loss32().backward();
  EXPECT_NE(wf.grad().raw_data(), slot32.raw_data());
  const std::vector<double> twice = wf.grad().to_vector_f64(), slot_after = slot32.to_vector_f64();
  for (std::size_t i = 0; i < want.size(); ++i) {
    EXPECT_NEAR(twice[i], 2 * want[i], 1e-5);
    EXPECT_EQ(slot_after[i], got[i]);
  }
  // No destination: a gradient of its own.
  wf.zero_grad();
  wf.set_grad_destination(Tensor());
  loss32().backward();
  EXPECT_NE(wf.grad().raw_data(), slot32.raw_data());
}

// A scaled 16-bit destination (a bf16 wire slot) is offered only for a leaf's last gradient of the
// pass when it has none yet: a linear weight in bf16 precision is then the slot itself, scale times its
// gradient rounded; a weight that two ops use, or one that already holds a gradient, is not written.
TEST(Engine, AScaledDestinationTakesALeafsOnlyGradientOfAPass) {
  if (!cpu_has_bf16()) GTEST_SKIP() << "this CPU has no bf16 dot products";
  const ComputePrecisionScope bf16(ComputePrecision::kBF16);
  Variable x(random_var({3, 4}, 8, -1, 1, false).data().to(DType::kF32), false);
  Variable w(random_var({2, 4}, 9).data().to(DType::kF32), true);
  const Tensor labels = Tensor::from_labels({0, 1, 1});
  const auto once = [&] { return ops::softmax_cross_entropy(ops::linear(x, w, Variable()), labels); };
  const auto twice = [&] {
    return ops::softmax_cross_entropy(ops::add(ops::linear(x, w, Variable()), ops::linear(x, w, Variable())), labels);
  };
  once().backward();
  const std::vector<float> want = w.grad().to_vector();
  w.zero_grad();
  const std::vector<float> zeros(8, 0.0f);

  Tensor slot = Tensor::zeros({2, 4}, DType::kBF16);
  w.set_scaled_grad_destination(slot, 0.25f);
  once().backward();
  EXPECT_EQ(w.grad().raw_data(), slot.raw_data()) << "the gradient is the slot";
  EXPECT_EQ(w.grad().dtype(), DType::kBF16);
  const std::vector<float> got = slot.to_vector();
  for (std::size_t i = 0; i < want.size(); ++i) EXPECT_EQ(got[i], bf16_to_f32(f32_to_bf16(0.25f * want[i]))) << i;

  w.zero_grad();
  slot.fill(0.0);
  twice().backward();
  EXPECT_EQ(w.grad().dtype(), DType::kF32) << "two edges to the leaf: added in f32";
  EXPECT_EQ(slot.to_vector(), zeros);

  // Accumulating: the leaf holds a gradient already.
  w.zero_grad();
  w.set_scaled_grad_destination(Tensor(), 1.0f);
  once().backward();
  w.set_scaled_grad_destination(slot, 0.25f);
  once().backward();
  EXPECT_EQ(w.grad().dtype(), DType::kF32);
  EXPECT_EQ(slot.to_vector(), zeros);
  // Nothing is ever added to a scaled gradient: a second pass onto one is an error, not a wrong sum.
  w.zero_grad();
  once().backward();
  ASSERT_EQ(w.grad().dtype(), DType::kBF16);
  EXPECT_THROW(once().backward(), InternalError);

  w.zero_grad();
  w.set_scaled_grad_destination(Tensor(), 1.0f);
  once().backward();
  EXPECT_EQ(w.grad().dtype(), DType::kF32) << "no destination";
}

TEST(Engine, NoGradRecordsNothing) {
  Variable w = random_var({2, 2}, 7);
  NoGradGuard guard;
  Variable y = ops::relu(w);
  EXPECT_FALSE(y.requires_grad());
}

TEST(Engine, SecondBackwardThroughFreedGraphIsAClearError) {
  Variable w = random_var({2}, 8);
  Variable y = ops::reshape(ops::mul(w, w), {2});
  y.backward(Tensor::full({2}, 1.0, DType::kF64));
  try {
    y.backward(Tensor::full({2}, 1.0, DType::kF64));
    FAIL() << "expected an error";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("second time"), std::string::npos);
  }
}

TEST(Engine, ShapeMismatchNamesBothShapes) {
  Variable a = random_var({2, 3}, 9), b = random_var({3, 2}, 10);
  try {
    ops::add(a, b);
    FAIL();
  } catch (const ShapeError& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("[2, 3]"), std::string::npos) << m;
    EXPECT_NE(m.find("[3, 2]"), std::string::npos) << m;
  }
}

}  // namespace
}  // namespace dtrain
