#include <gtest/gtest.h>

#include <cmath>

#include "optim/optimizer.h"
#include "optim/schedule.h"
#include "tensor/backend.h"

namespace dtrain {
namespace {

Variable param(const std::vector<float>& v) {
  const auto n = static_cast<std::int64_t>(v.size());
  return Variable(Tensor::from_vector(v, {n}), true);
}

void set_grad(Variable& p, const std::vector<float>& g) {
  const auto n = static_cast<std::int64_t>(g.size());
  p.set_grad(Tensor::from_vector(g, {n}));
}

TEST(Sgd, MomentumFollowsChainerForm) {
  // v = mu*v - lr*(g + wd*w); w += v, worked by hand for two steps.
  Variable w = param({1.0f, -2.0f});
  OptimizerConfig c;
  c.lr = 0.1;
  c.momentum = 0.9;
  c.weight_decay = 0.01;
  auto opt = make_optimizer(c, {w});
  set_grad(w, {0.5f, 1.0f});
  opt->step();
  // v1 = -0.1*(0.5 + 0.01) = -0.051; w = 0.949.  v1' = -0.1*(1 - 0.02) = -0.098; w' = -2.098
  EXPECT_NEAR(w.data().to_vector()[0], 0.949, 1e-6);
  EXPECT_NEAR(w.data().to_vector()[1], -2.098, 1e-6);
  set_grad(w, {0.5f, 1.0f});
  opt->step();
  // v2 = 0.9*(-0.051) - 0.1*(0.5 + 0.00949) = -0.096849; w = 0.8521551
  EXPECT_NEAR(w.data().to_vector()[0], 0.949 - 0.096849, 1e-6);
}

TEST(Sgd, NesterovLooksAhead) {
  Variable w = param({1.0f});
  OptimizerConfig c;
  c.lr = 0.1;
  c.momentum = 0.5;
  c.nesterov = true;
  auto opt = make_optimizer(c, {w});
  set_grad(w, {1.0f});
  opt->step();
  // v = -0.1; w += 0.5*(-0.1) - 0.1 = -0.15
  EXPECT_NEAR(w.data().to_vector()[0], 0.85, 1e-6);
}

TEST(Sgd, FastAndReferenceKernelsAgree) {
  std::vector<float> w0(1000), g(1000);
  for (int i = 0; i < 1000; ++i) {
    w0[i] = std::sin(0.1f * i);
    g[i] = std::cos(0.3f * i);
  }
  Variable a = param(w0), b = param(w0);
  OptimizerConfig c;
  c.weight_decay = 1e-3;
  c.nesterov = true;
  auto oa = make_optimizer(c, {a});
  auto ob = make_optimizer(c, {b});
  for (int s = 0; s < 3; ++s) {
    set_grad(a, g);
    set_grad(b, g);
    oa->step();
    ReferenceKernelsScope ref;
    ob->step();
  }
  const auto va = a.data().to_vector(), vb = b.data().to_vector();
  for (int i = 0; i < 1000; ++i) EXPECT_NEAR(va[i], vb[i], 1e-6);
}

TEST(Adam, FirstStepMovesByLearningRate) {
  // With bias correction the first Adam step is lr * g / (|g| + eps) = lr * sign(g).
  Variable w = param({1.0f, 1.0f});
  OptimizerConfig c;
  c.name = "adam";
  c.lr = 0.01;
  auto opt = make_optimizer(c, {w});
  set_grad(w, {3.0f, -0.2f});
  opt->step();
  EXPECT_NEAR(w.data().to_vector()[0], 0.99, 1e-6);
  EXPECT_NEAR(w.data().to_vector()[1], 1.01, 1e-6);
}

TEST(Rmsprop, FirstStep) {
  Variable w = param({1.0f});
  OptimizerConfig c;
  c.name = "rmsprop";
  c.lr = 0.01;
  c.alpha = 0.9;
  auto opt = make_optimizer(c, {w});
  set_grad(w, {2.0f});
  opt->step();
  // s = 0.1*4 = 0.4; w -= 0.01*2/sqrt(0.4)
  EXPECT_NEAR(w.data().to_vector()[0], 1.0 - 0.02 / std::sqrt(0.4), 1e-6);
}

TEST(Optimizer, QuadraticConverges) {
  for (const std::string name : {"sgd", "rmsprop", "adam"}) {
    Variable w = param({5.0f, -3.0f});
    OptimizerConfig c;
    c.name = name;
    c.lr = name == "sgd" ? 0.1 : 0.05;
    auto opt = make_optimizer(c, {w});
    for (int s = 0; s < 500; ++s) {
      auto v = w.data().to_vector();
      set_grad(w, {2 * v[0], 2 * v[1]});  // d/dw |w|^2
      opt->step();
    }
    for (float v : w.data().to_vector()) EXPECT_NEAR(v, 0.0, 0.05) << name;
  }
}

TEST(Optimizer, UnknownNameListsValidOnes) {
  OptimizerConfig c;
  c.name = "lbfgs";
  try {
    make_optimizer(c, {});
    FAIL();
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("sgd, rmsprop, adam"), std::string::npos) << e.what();
  }
}

TEST(Schedule, StepCosineWarmup) {
  ScheduleConfig c;
  c.base_lr = 1.0;
  c.name = "step";
  c.step_epochs = 2;
  c.gamma = 0.5;
  auto s = make_schedule(c);
  EXPECT_DOUBLE_EQ(s->lr(1.9), 1.0);
  EXPECT_DOUBLE_EQ(s->lr(2.0), 0.5);
  EXPECT_DOUBLE_EQ(s->lr(4.5), 0.25);
  c.name = "cosine";
  c.total_epochs = 10;
  s = make_schedule(c);
  EXPECT_NEAR(s->lr(5), 0.5, 1e-12);
  EXPECT_NEAR(s->lr(10), 0.0, 1e-12);
  c.name = "constant";
  c.warmup_epochs = 5;
  c.warmup_start_factor = 0.2;
  s = make_schedule(c);
  EXPECT_NEAR(s->lr(0), 0.2, 1e-12);
  EXPECT_NEAR(s->lr(2.5), 0.6, 1e-12);
  EXPECT_NEAR(s->lr(5), 1.0, 1e-12);
  c.name = "poly";
  EXPECT_THROW(make_schedule(c), InputError);
}

}  // namespace
}  // namespace dtrain
