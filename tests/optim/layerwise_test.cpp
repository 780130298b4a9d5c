// LARS and LAMB (optim/lars.h, optim/lamb.h) against hand computations: the trust ratio, its
// fallback to 1 at a zero norm, the exclusion of one-dimensional parameters, and the refusal to
// update part of a parameter.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "comm/exact_sum.h"
#include "comm/local_transport.h"
#include "core/error.h"
#include "optim/lamb.h"
#include "optim/lars.h"
#include "optim/optimizer.h"

namespace dtrain {
namespace {

Variable matrix(const std::vector<float>& v) {  // 2 x (n/2): adapted
  const auto n = static_cast<std::int64_t>(v.size());
  return Variable(Tensor::from_vector(v, {2, n / 2}), true);
}

Variable vector(const std::vector<float>& v) {  // 1-d: a bias or batch-norm parameter
  const auto n = static_cast<std::int64_t>(v.size());
  return Variable(Tensor::from_vector(v, {n}), true);
}

void set_layer_grad(Variable& p, const std::vector<float>& g) { p.set_grad(Tensor::from_vector(g, p.data().shape())); }

OptimizerConfig layerwise_config(const char* name, double lr, double wd) {
  OptimizerConfig c;
  c.name = name;
  c.lr = lr;
  c.momentum = 0.9;
  c.weight_decay = wd;
  c.trust_coefficient = 0.01;
  c.eps = 1e-6;
  return c;
}

TEST(Lars, TwoStepsByHand) {
  // w = (3, 4): ||w|| = 5; g = (0, 1): ||g|| = 1; wd 0.1, eta 0.01, lr 2, mu 0.9.
  Variable w = matrix({3, 4});
  auto opt = make_optimizer(layerwise_config("lars", 2, 0.1), {w});
  set_layer_grad(w, {0, 1});
  opt->step();
  // ratio = 0.01*5/(1 + 0.1*5) = 1/30; d = (0.3, 1.4); v = -2/30*d = (-0.02, -0.0933333)
  const double v0 = -2.0 / 30 * 0.3, v1 = -2.0 / 30 * 1.4;
  auto got = w.data().to_vector();
  EXPECT_NEAR(got[0], 3 + v0, 1e-6);
  EXPECT_NEAR(got[1], 4 + v1, 1e-6);
  set_layer_grad(w, {0, 1});
  opt->step();
  const double w0 = 3 + v0, w1 = 4 + v1, wn = std::hypot(w0, w1);
  const double ratio = 0.01 * wn / (1 + 0.1 * wn);
  const double u0 = 0.9 * v0 - 2 * ratio * (0 + 0.1 * w0), u1 = 0.9 * v1 - 2 * ratio * (1 + 0.1 * w1);
  got = w.data().to_vector();
  EXPECT_NEAR(got[0], w0 + u0, 1e-6);
  EXPECT_NEAR(got[1], w1 + u1, 1e-6);
}

TEST(Lars, ZeroNormsFallBackToRatioOneAndOneDimensionalParametersAreExcluded) {
  // A zero-initialised matrix (ratio 1: it must still move) and a 1-d parameter (never adapted
  // nor decayed): both take the plain momentum step -lr*g.
  Variable zero = matrix({0, 0});
  Variable bias = vector({1, 2});
  auto opt = make_optimizer(layerwise_config("lars", 0.5, 0.1), {zero, bias});
  set_layer_grad(zero, {1, -1});
  set_layer_grad(bias, {1, 1});
  opt->step();
  EXPECT_EQ(zero.data().to_vector(), (std::vector<float>{-0.5f, 0.5f}));
  EXPECT_EQ(bias.data().to_vector(), (std::vector<float>{0.5f, 1.5f}));
  // With --adapt-all the 1-d parameter is adapted and decayed: ratio 0.01*sqrt(5)/(sqrt(2) + 0.1*sqrt(5)).
  OptimizerConfig all = layerwise_config("lars", 0.5, 0.1);
  all.adapt_all = true;
  Variable b2 = vector({1, 2});
  auto opt2 = make_optimizer(all, {b2});
  set_layer_grad(b2, {1, 1});
  opt2->step();
  const double ratio = 0.01 * std::sqrt(5.0) / (std::sqrt(2.0) + 0.1 * std::sqrt(5.0));
  EXPECT_NEAR(b2.data().to_vector()[0], 1 - 0.5 * ratio * (1 + 0.1), 1e-7);
  EXPECT_NEAR(b2.data().to_vector()[1], 2 - 0.5 * ratio * (1 + 0.2), 1e-7);
  EXPECT_DOUBLE_EQ(Lars::trust_ratio(Tensor::from_vector(std::vector<float>{0.0f}, Shape{1}),
                                     Tensor::from_vector(std::vector<float>{1.0f}, Shape{1}), 0, 0.001),
                   1.0);
}

TEST(Lamb, TwoStepsByHand) {
  // w = (3, 4), g = (1, 2) then (1, 2); b1 0.9, b2 0.999, eps 1e-6, wd 0.1, lr 0.1.
  Variable w = matrix({3, 4});
  auto opt = make_optimizer(layerwise_config("lamb", 0.1, 0.1), {w});
  std::vector<double> ww{3, 4}, m{0, 0}, v{0, 0};
  const std::vector<double> g{1, 2};
  for (int t = 1; t <= 2; ++t) {
    set_layer_grad(w, {1, 2});
    opt->step();
    std::vector<double> r(2);
    for (int i = 0; i < 2; ++i) {
      m[i] = 0.9 * m[i] + 0.1 * g[i];
      v[i] = 0.999 * v[i] + 0.001 * g[i] * g[i];
      r[i] = (m[i] / (1 - std::pow(0.9, t))) / (std::sqrt(v[i] / (1 - std::pow(0.999, t))) + 1e-6) + 0.1 * ww[i];
    }
    const double ratio = std::hypot(ww[0], ww[1]) / std::hypot(r[0], r[1]);
    for (int i = 0; i < 2; ++i) ww[i] -= 0.1 * ratio * r[i];
    const auto got = w.data().to_vector();
    EXPECT_NEAR(got[0], ww[0], 1e-5) << "step " << t;
    EXPECT_NEAR(got[1], ww[1], 1e-5) << "step " << t;
  }
}

TEST(Lamb, ExcludedAndZeroParametersTakeAdamsStep) {
  // Step 1 of Adam moves each element by lr * g / (|g| + eps) ~ lr * sign(g).
  Variable bias = vector({1, 2});
  Variable zero = matrix({0, 0});
  auto opt = make_optimizer(layerwise_config("lamb", 0.1, 0.1), {bias, zero});
  set_layer_grad(bias, {1, -2});
  set_layer_grad(zero, {3, -4});
  opt->step();
  EXPECT_NEAR(bias.data().to_vector()[0], 1 - 0.1, 1e-6);
  EXPECT_NEAR(bias.data().to_vector()[1], 2 + 0.1, 1e-6);
  EXPECT_NEAR(zero.data().to_vector()[0], -0.1, 1e-6);
  EXPECT_NEAR(zero.data().to_vector()[1], 0.1, 1e-6);
}

TEST(Layerwise, PartOfAParameterIsRefusedAndTheWholeIsAllowed) {
  for (const char* name : {"lars", "lamb"}) {
    Variable w = matrix({1, 2, 3, 4});
    auto opt = make_optimizer(layerwise_config(name, 0.1, 0), {w});
    EXPECT_TRUE(opt->layerwise());
    set_layer_grad(w, {1, 1, 1, 1});
    EXPECT_THROW(opt->step_part(0, 2), InputError) << name;
    EXPECT_NO_THROW(opt->step_part(0, 1)) << name;
  }
  OptimizerConfig bad = layerwise_config("lars", 0.1, 0);
  bad.trust_coefficient = 0;
  Variable w = matrix({1, 2});
  EXPECT_THROW(make_optimizer(bad, {w}), InputError);
}

}  // namespace
}  // namespace dtrain

namespace dtrain {
namespace {

// Goyal et al.: no weight decay on biases and batch-norm parameters (one-dimensional), in every
// element-wise optimizer, when decay_1d is off.
TEST(WeightDecay, OneDimensionalParametersAreLeftOutWhenAsked) {
  for (const char* name : {"sgd", "rmsprop", "adam"}) {
    for (bool decay_1d : {true, false}) {
      Variable w = matrix({1, 2});
      Variable b = vector({1, 2});
      OptimizerConfig c = layerwise_config(name, 0.1, 0.5);
      c.decay_1d = decay_1d;
      auto opt = make_optimizer(c, {w, b});
      set_layer_grad(w, {0, 0});
      set_layer_grad(b, {0, 0});
      opt->step();
      EXPECT_LT(w.data().to_vector()[1], 2.0f) << name << ": a matrix always decays";
      if (decay_1d) {
        EXPECT_LT(b.data().to_vector()[1], 2.0f) << name;
      } else {
        EXPECT_EQ(b.data().to_vector(), (std::vector<float>{1, 2})) << name << ": with a zero gradient it stays";
      }
    }
  }
}

// The split step (optim/optimizer.h, set_norm_reducer): two ranks (threads) over the same
// parameters, each updating its half of every tensor with the norms summed over both halves,
// equal the whole step for 3 steps: a weight matrix, a one-dimensional parameter (not adapted)
// and a zero matrix (ratio 1).
std::vector<std::vector<float>> three_steps(const char* name, int parts) {
  std::vector<Variable> params{matrix({0.3F, -1.2F, 0.8F, 2.0F, -0.5F, 0.1F}), vector({0.5F, -0.25F, 1.0F}),
                               matrix({0, 0, 0, 0})};
  auto gradients = [](int step) {
    const auto s = static_cast<float>(step + 1);
    return std::vector<std::vector<float>>{
        {0.1F * s, -0.3F, 0.2F, 0.05F * s, -0.1F, 0.4F}, {0.2F, -0.1F * s, 0.3F}, {0.5F, -0.5F * s, 0.25F, 0.1F}};
  };
  auto run_steps = [&](Optimizer& opt, int part, comm::Communicator* c) {
    for (int step = 0; step < 3; ++step) {
      if (part == 0) {
        const auto g = gradients(step);
        for (std::size_t i = 0; i < params.size(); ++i) set_layer_grad(params[i], g[i]);
      }
      if (c != nullptr) c->barrier();  // gradients set before either half reads them
      opt.step_part(part, parts);
      if (c != nullptr) c->barrier();  // both halves written before the next step's norms
    }
  };
  OptimizerConfig config = layerwise_config(name, name[1] == 'a' ? 0.5 : 0.05, 0.01);
  if (parts == 1) {
    auto opt = make_optimizer(config, params);
    run_steps(*opt, 0, nullptr);
  } else {
    comm::run_local(parts, [&](comm::Communicator& c) {
      auto opt = make_optimizer(config, params);  // its own state: each element's is touched by one half only
      opt->set_norm_reducer([&c](std::vector<double>& v) { comm::sum_in_rank_order(c, v); });
      run_steps(*opt, c.rank(), &c);
    });
  }
  std::vector<std::vector<float>> out;
  for (const Variable& p : params) out.push_back(p.data().to_vector());
  return out;
}

TEST(Layerwise, SplitStepWithReducedNormsEqualsTheWholeStep) {
  for (const char* name : {"lars", "lamb"}) {
    const auto whole = three_steps(name, 1);
    const auto split = three_steps(name, 2);
    for (std::size_t i = 0; i < whole.size(); ++i) {
      for (std::size_t k = 0; k < whole[i].size(); ++k) {
        EXPECT_NEAR(split[i][k], whole[i][k], 1e-6) << name << " parameter " << i << " element " << k;
      }
    }
    EXPECT_NE(whole[2], std::vector<float>(4, 0.0F)) << name << ": a zero matrix moves (ratio 1)";
  }
}

}  // namespace
}  // namespace dtrain
