// RMSprop warm-up (optim/rmsprop_warmup.h) against its closed forms: the transition's values and
// continuity, three steps by hand, and momentum SGD once a_sgd = 1; the slow-start schedule.
#include "optim/rmsprop_warmup.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "core/error.h"
#include "optim/optimizer.h"
#include "optim/schedule.h"

namespace dtrain {
namespace {

TEST(SgdShare, ValuesAtZeroCentreAndEnd) {
  EXPECT_NEAR(sgd_share(0, 10, 5), 0.5 * std::exp(-4.0), 1e-12);  // 0.00916
  EXPECT_DOUBLE_EQ(sgd_share(10, 10, 5), 0.5);
  EXPECT_DOUBLE_EQ(sgd_share(11, 10, 5), 0.7);
  EXPECT_DOUBLE_EQ(sgd_share(12.5, 10, 5), 1.0);
  EXPECT_DOUBLE_EQ(sgd_share(50, 10, 5), 1.0);
  EXPECT_NEAR(sgd_share(8, 10, 5), 0.5 * std::exp(-0.8), 1e-12);  // 0.2247
}

TEST(SgdShare, ValueAndSlopeContinuousAtTheJoins) {
  const double c = 1.1, p = 0.55, h = 1e-7;
  for (double join : {c, c + p / 2}) {
    EXPECT_NEAR(sgd_share(join - h, c, p), sgd_share(join + h, c, p), 1e-6) << "value at " << join;
  }
  // At c both branches have slope 1/p (the exponential's derivative there is 2/p * 1/2).
  const double left = (sgd_share(c - h, c, p) - sgd_share(c - 2 * h, c, p)) / h;
  const double right = (sgd_share(c + 2 * h, c, p) - sgd_share(c + h, c, p)) / h;
  EXPECT_NEAR(left, 1 / p, 1e-4);
  EXPECT_NEAR(right, 1 / p, 1e-4);
}

OptimizerConfig warmup_config(double lr) {
  OptimizerConfig c;
  c.name = "rmsprop-warmup";
  c.lr = lr;
  c.momentum = 0.9;
  c.alpha = 0.99;
  c.eps = 1e-8;
  c.rmsprop_lr = 0.01;
  c.transition_centre = 2;
  c.transition_period = 2;
  return c;
}

TEST(RmspropWarmup, ThreeStepsByHand) {
  Variable w(Tensor::from_vector(std::vector<float>{1.0F, -2.0F}, Shape{2}), true);
  OptimizerConfig config = warmup_config(0.5);
  config.weight_decay = 0.1;
  auto opt = make_optimizer(config, {w});
  const std::vector<std::vector<double>> grads{{0.4, -0.2}, {0.1, 0.3}, {-0.5, 0.05}};
  const std::vector<double> epochs{0.0, 2.5, 3.5}, rates{0.5, 0.25, 0.1};
  std::vector<double> ww{1.0, -2.0}, m{0, 0}, d{0, 0};
  for (std::size_t t = 0; t < 3; ++t) {
    opt->set_lr(rates[t]);
    opt->set_progress(epochs[t]);
    w.set_grad(Tensor::from_vector(std::vector<float>{static_cast<float>(grads[t][0]), static_cast<float>(grads[t][1])},
                                   Shape{2}));
    opt->step();
    const double a_sgd = t == 0 ? 0.5 * std::exp(-2.0) : t == 1 ? 0.75 : 1.0;
    const double a_rms = (1 - a_sgd) * 0.01 / rates[t];
    for (int i = 0; i < 2; ++i) {
      const double g = grads[t][i] + 0.1 * ww[i];
      m[i] = 0.99 * m[i] + 0.01 * g * g;
      d[i] = 0.9 * d[i] - (a_sgd + a_rms / (std::sqrt(m[i]) + 1e-8)) * g;
      ww[i] += rates[t] * d[i];
    }
    const auto got = w.data().to_vector();
    EXPECT_NEAR(got[0], ww[0], 1e-5) << "step " << t;
    EXPECT_NEAR(got[1], ww[1], 1e-5) << "step " << t;
  }
}

TEST(RmspropWarmup, IsMomentumSgdOnceSgdShareIsOne) {
  Variable a(Tensor::from_vector(std::vector<float>{0.3F, -0.7F, 1.5F}, Shape{3}), true);
  Variable b(Tensor::from_vector(std::vector<float>{0.3F, -0.7F, 1.5F}, Shape{3}), true);
  auto warm = make_optimizer(warmup_config(0.2), {a});
  OptimizerConfig sgd_config;
  sgd_config.name = "sgd";
  sgd_config.lr = 0.2;
  sgd_config.momentum = 0.9;
  auto sgd = make_optimizer(sgd_config, {b});
  for (int t = 0; t < 20; ++t) {
    const std::vector<float> g{0.1F * static_cast<float>(t % 3), -0.2F, 0.05F * static_cast<float>(t)};
    a.set_grad(Tensor::from_vector(g, {3}));
    b.set_grad(Tensor::from_vector(g, {3}));
    warm->set_progress(3.0 + t);  // past centre + period / 2 = 3
    warm->step();
    sgd->step();
  }
  const auto x = a.data().to_vector(), y = b.data().to_vector();
  for (std::size_t i = 0; i < x.size(); ++i) EXPECT_NEAR(x[i], y[i], 1e-5);
}

TEST(RmspropWarmup, RefusesNonPositiveCentreOrPeriod) {
  for (auto [centre, period, flag] :
       {std::tuple{0.0, 5.0, "--transition-centre"}, std::tuple{10.0, -1.0, "--transition-period"}}) {
    OptimizerConfig c = warmup_config(0.1);
    c.transition_centre = centre;
    c.transition_period = period;
    try {
      (void)make_optimizer(c, {});
      FAIL() << "accepted centre " << centre << " period " << period;
    } catch (const InputError& e) {
      EXPECT_NE(std::string(e.what()).find(flag), std::string::npos) << e.what();
    }
  }
}

TEST(SlowStartSchedule, AkibaPhasesStretchedToTheRun) {
  ScheduleConfig c;
  c.name = "slow-start";
  c.base_lr = 3.2;
  c.total_epochs = 9;  // the paper's 90 epochs / 10
  auto s = make_schedule(c);
  EXPECT_DOUBLE_EQ(s->lr(0), 1.6);
  EXPECT_DOUBLE_EQ(s->lr(3.99), 1.6);
  EXPECT_DOUBLE_EQ(s->lr(4.0), 3.2 * 0.075);
  EXPECT_DOUBLE_EQ(s->lr(6.99), 3.2 * 0.075);
  EXPECT_DOUBLE_EQ(s->lr(7.0), 3.2 * 0.01);
  EXPECT_DOUBLE_EQ(s->lr(8.5), 3.2 * 0.001);
}

}  // namespace
}  // namespace dtrain
