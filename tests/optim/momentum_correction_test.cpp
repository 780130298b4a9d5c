// Goyal et al.'s momentum correction (optim/sgd.h): with the velocity rescaled by lr_t / lr_{t-1},
// dtrain's lr-inside form equals the lr-outside form (PyTorch's: u = mu*u + g; w -= lr*u) at every
// step of a changing rate; without it the two part.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "optim/optimizer.h"
#include "optim/schedule.h"

namespace dtrain {
namespace {

// A piecewise rate over 100 steps: constant, a linear warmup from 0.01 to 0.5, constant, a step
// down by 10, and one step 10x lower and back (a rate of 0 would lose the lr-inside velocity:
// optim/sgd.h).
double piecewise_lr(int t) {
  if (t < 20) return 0.01;
  if (t < 60) return 0.01 + (0.5 - 0.01) * (t - 20) / 40.0;
  if (t < 80) return 0.5;
  if (t == 90) return 0.005;
  return 0.05;
}

float gradient(int t, int i) { return std::sin(0.37f * static_cast<float>(t) + 1.3f * static_cast<float>(i)); }

// Max relative difference between dtrain's sgd and the lr-outside form after 100 steps.
double gap_to_lr_outside(bool correction, bool nesterov) {
  constexpr int kN = 16, kSteps = 100;
  constexpr double kMu = 0.9, kWd = 1e-3;
  std::vector<float> w0(kN);
  for (int i = 0; i < kN; ++i) w0[static_cast<std::size_t>(i)] = 0.1f * static_cast<float>(i) - 0.7f;
  Variable w(Tensor::from_vector(w0, {kN}), true);
  OptimizerConfig c;
  c.momentum = kMu;
  c.weight_decay = kWd;
  c.nesterov = nesterov;
  c.momentum_correction = correction;
  auto opt = make_optimizer(c, {w});
  std::vector<double> ref(w0.begin(), w0.end()), u(kN, 0.0);
  for (int t = 0; t < kSteps; ++t) {
    std::vector<float> g(kN);
    for (int i = 0; i < kN; ++i) g[static_cast<std::size_t>(i)] = gradient(t, i);
    w.set_grad(Tensor::from_vector(g, {kN}));
    opt->set_lr(piecewise_lr(t));
    opt->step();
    for (std::size_t i = 0; i < kN; ++i) {
      const double d = g[i] + kWd * ref[i];
      u[i] = kMu * u[i] + d;
      ref[i] -= piecewise_lr(t) * (nesterov ? d + kMu * u[i] : u[i]);
    }
  }
  const auto got = w.data().to_vector();
  double worst = 0;
  for (std::size_t i = 0; i < kN; ++i)
    worst = std::max(worst, std::abs(got[i] - ref[i]) / std::max(1.0, std::abs(ref[i])));
  return worst;
}

TEST(MomentumCorrection, EqualsTheLrOutsideFormOverAPiecewiseRate) {
  EXPECT_LT(gap_to_lr_outside(true, false), 1e-5);
  EXPECT_LT(gap_to_lr_outside(true, true), 1e-5) << "Nesterov";
  // Without the correction the velocity keeps the old rate's steps: the forms part.
  EXPECT_GT(gap_to_lr_outside(false, false), 1e-2);
}

// A resumed run continues from the rate of the step before it: one optimizer told that rate
// matches one that made the step.
TEST(MomentumCorrection, AResumedOptimizerKnowsThePreviousRate) {
  OptimizerConfig c;
  Variable a(Tensor::from_vector(std::vector<float>{1.0f}, {1}), true);
  auto straight = make_optimizer(c, {a});
  a.set_grad(Tensor::from_vector(std::vector<float>{1.0f}, {1}));
  straight->set_lr(0.1);
  straight->step();
  EXPECT_DOUBLE_EQ(straight->applied_lr(), 0.1);
  ScheduleConfig sc;
  sc.name = "step";
  sc.base_lr = 0.1;
  sc.step_epochs = 1;
  const auto s = make_schedule(sc);
  EXPECT_DOUBLE_EQ(lr_at_iteration(*s, 9, 10), 0.1);
  EXPECT_NEAR(lr_at_iteration(*s, 10, 10), 0.01, 1e-15);
}

}  // namespace
}  // namespace dtrain
