#include "optim/optimizer.h"

#include <gtest/gtest.h>

#include <cmath>
#include <span>

#include "core/random.h"
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

TEST(Optimizer, PartsOfTheUpdateEqualTheWholeStepBitForBit) {
  // Ranks that share one copy of the weights each update a part (parallel/shared_weights.h): the
  // parts, each on its own elements, must give exactly the weights and state of one step().
  Rng rng(3);
  for (const std::string name : {"sgd", "rmsprop", "adam"}) {
    OptimizerConfig c;
    c.name = name;
    c.lr = 0.05;
    c.weight_decay = 0.01;
    c.nesterov = name == "sgd";
    // Shapes whose sizes do not divide by the parts, and a one-element bias that some parts skip.
    const std::vector<Shape> shapes{{7, 3}, {1}, {2, 5, 3}};
    std::vector<Variable> whole, parted;
    for (const Shape& s : shapes) {
      Tensor t = Tensor::empty(s);
      for (float& x : std::span(t.data<float>(), static_cast<std::size_t>(t.numel())))
        x = static_cast<float>(rng.uniform(-1, 1));
      whole.emplace_back(t.clone(), true);
      parted.emplace_back(t.clone(), true);
    }
    auto one = make_optimizer(c, whole), split = make_optimizer(c, parted);
    constexpr int kParts = 3;
    for (int step = 0; step < 4; ++step) {
      for (std::size_t i = 0; i < shapes.size(); ++i) {
        Tensor g = Tensor::empty(shapes[i]);
        for (float& x : std::span(g.data<float>(), static_cast<std::size_t>(g.numel())))
          x = static_cast<float>(rng.uniform(-1, 1));
        whole[i].set_grad(g.clone());
        parted[i].set_grad(g.clone());
      }
      one->step();
      // Each part counts as the step it is on its rank, so every part sees the same step count.
      for (int part = 0; part < kParts; ++part) {
        split->set_steps(step);
        split->step_part(part, kParts);
      }
      EXPECT_EQ(split->steps(), one->steps());
    }
    for (std::size_t i = 0; i < shapes.size(); ++i) {
      EXPECT_EQ(whole[i].data().to_vector(), parted[i].data().to_vector()) << name << " parameter " << i;
    }
    const auto a = one->state(), b = split->state();
    ASSERT_EQ(a.size(), b.size());
    for (std::size_t k = 0; k < a.size(); ++k) {
      EXPECT_EQ(a[k].second.to_vector(), b[k].second.to_vector()) << name << " " << a[k].first;
    }
  }
}

TEST(Optimizer, RangesOutsideTheParameterAreRefused) {
  Variable w = param({1.0f, 2.0f});
  auto opt = make_optimizer({}, {w});
  set_grad(w, {1.0f, 1.0f});
  const std::vector<Optimizer::Range> past_end{{1, 3}};
  EXPECT_THROW(opt->step_ranges(past_end), InternalError);
  const std::vector<Optimizer::Range> too_many{{0, 1}, {0, 1}};
  EXPECT_THROW(opt->step_ranges(too_many), InternalError);
}

TEST(Optimizer, RelocatedStateKeepsItsValuesAndIsWhereItWasPut) {
  Variable w = param({1.0f, 2.0f, 3.0f});
  auto opt = make_optimizer({}, {w});
  set_grad(w, {1.0f, 1.0f, 1.0f});
  opt->step();
  const std::vector<float> momentum = opt->state()[0].second.to_vector();
  std::vector<float> elsewhere(3, 0.0f);
  opt->relocate_state([&](const Tensor& t) {
    Tensor moved = Tensor::over_external(elsewhere.data(), t.shape());
    moved.copy_from(t);
    return moved;
  });
  EXPECT_EQ(elsewhere, momentum);
  EXPECT_EQ(opt->state()[0].second.raw_data(), static_cast<void*>(elsewhere.data()));
  opt->step();  // updates the relocated state in place
  EXPECT_NE(elsewhere, momentum);
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
