// The per-push learning rates and the momentum compensation of SSP and ASP servers
// (ps/async_corrections.h), as rules and as the servers apply them.
#include "ps/async_corrections.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <thread>
#include <vector>

#include "core/error.h"
#include "ps/ps_test_util.h"

namespace dtrain::ps {
namespace {

using testing::PsOutcome;
using testing::run_ps;
using testing::test_config;

TEST(AsyncCorrections, RulesAndNames) {
  EXPECT_DOUBLE_EQ(per_push_lr(AsyncLr::kDivided, 0.3, 3, 7), 0.1);
  EXPECT_DOUBLE_EQ(per_push_lr(AsyncLr::kStaleness, 0.3, 3, 2), 0.15);
  EXPECT_DOUBLE_EQ(per_push_lr(AsyncLr::kStaleness, 0.3, 3, 0), 0.3) << "a fresh push divides by 1, not 0";
  EXPECT_DOUBLE_EQ(per_push_lr(AsyncLr::kFull, 0.3, 3, 2), 0.3);
  EXPECT_NEAR(server_momentum(AsyncMomentum::kCompensate, 0.9, 3), 0.9 - 2.0 / 3, 1e-12);
  EXPECT_DOUBLE_EQ(server_momentum(AsyncMomentum::kCompensate, 0.5, 4), 0.0) << "never negative";
  EXPECT_DOUBLE_EQ(server_momentum(AsyncMomentum::kCompensate, 0.9, 1), 0.9) << "one worker adds none";
  EXPECT_DOUBLE_EQ(server_momentum(AsyncMomentum::kKeep, 0.9, 3), 0.9);
  for (AsyncLr r : {AsyncLr::kDivided, AsyncLr::kStaleness, AsyncLr::kFull}) {
    EXPECT_EQ(parse_async_lr(async_lr_name(r)), r);
  }
  EXPECT_EQ(parse_async_momentum("compensate"), AsyncMomentum::kCompensate);
  EXPECT_THROW(parse_async_lr("tau"), InputError);
  EXPECT_THROW(parse_async_momentum("auto"), InputError);

  OptimizerConfig sgd;
  sgd.momentum = 0.9;
  EXPECT_DOUBLE_EQ(server_optimizer(sgd, AsyncMomentum::kCompensate, "bsp", 3).momentum, 0.9) << "bsp takes none";
  EXPECT_NEAR(server_optimizer(sgd, AsyncMomentum::kCompensate, "asp", 3).momentum, 0.9 - 2.0 / 3, 1e-12);
  OptimizerConfig adam = sgd;
  adam.name = "adam";
  EXPECT_THROW(server_optimizer(adam, AsyncMomentum::kCompensate, "ssp", 3), InputError);
  EXPECT_EQ(server_optimizer(adam, AsyncMomentum::kKeep, "ssp", 3).name, "adam");

  PsConfig bsp = test_config(2, 1, SyncMode::kBsp);
  bsp.async_lr = AsyncLr::kStaleness;
  EXPECT_THROW(bsp.validate(3), InputError) << "bsp applies one step per clock";
}

// Each worker pushes (rank + 1) at --lr 1: undivided, every push moves the weights by its value,
// the same end as the default's lr / W at --lr W.
TEST(AsyncCorrections, FullRatePushesMoveTheWeightsByTheirWholeGradient) {
  constexpr int kWorkers = 3, kClocks = 30;
  PsConfig config = test_config(kWorkers, 2, SyncMode::kAsp);
  config.async_lr = AsyncLr::kFull;
  const PsOutcome out = run_ps(config, testing::plain_sgd(1), testing::split_total(),
                               [&](comm::Transport& t) { testing::constant_push_worker(t, config, kClocks, 1); });
  EXPECT_EQ(out.weights, testing::constant_push_result(kWorkers, kClocks));
}

// Staleness-aware pushes: each moves the weights by (rank + 1) / max(1, tau), tau as the server
// recorded it for that worker's push, so the end follows from the servers' tau histograms.
TEST(AsyncCorrections, StalenessAwarePushesAreDividedByTheirTau) {
  constexpr int kWorkers = 3, kClocks = 40;
  PsConfig config = test_config(kWorkers, 1, SyncMode::kAsp);
  config.async_lr = AsyncLr::kStaleness;
  const PsOutcome out = run_ps(config, testing::plain_sgd(1), testing::split_total(), [&](comm::Transport& t) {
    testing::constant_push_worker(t, config, kClocks, 1, [&](int) {
      std::this_thread::sleep_for(std::chrono::microseconds(500 * (t.rank() + 1)));
    });
  });
  double moved = 0;
  bool stale = false;
  for (int w = 0; w < kWorkers; ++w) {
    const auto& counts = out.servers[0].worker_taus[static_cast<std::size_t>(w)].counts();
    for (std::size_t tau = 0; tau < counts.size(); ++tau) {
      moved += static_cast<double>(counts[tau]) * (w + 1) / static_cast<double>(std::max<std::size_t>(1, tau));
      stale |= tau >= 2 && counts[tau] > 0;
    }
  }
  ASSERT_TRUE(stale) << "no push was 2 or more updates stale: the test checks nothing";
  const std::vector<float> start = testing::constant_push_result(kWorkers, 0);
  for (std::size_t e = 0; e < start.size(); ++e) {
    EXPECT_NEAR(start[e] - out.weights[e], moved, 1e-4 * moved) << "element " << e;
  }
}

// Compensated momentum: W = 2 workers pushing the same gradient 1 (so the order does not matter)
// with per-push rate 1 and momentum mu move each weight by sum_{i=1..P} (1 - mu^i) / (1 - mu)
// after P pushes, with mu = 0.9 - (1 - 1/2) = 0.4 on the servers.
TEST(AsyncCorrections, CompensatedMomentumIsWhatTheServersStepWith) {
  constexpr int kWorkers = 2, kClocks = 10;
  for (AsyncMomentum rule : {AsyncMomentum::kKeep, AsyncMomentum::kCompensate}) {
    PsConfig config = test_config(kWorkers, 2, SyncMode::kAsp);
    config.async_momentum = rule;
    OptimizerConfig sgd = testing::plain_sgd(kWorkers);
    sgd.momentum = 0.9;
    const PsOutcome out = run_ps(config, sgd, testing::split_total(), [&](comm::Transport& t) {
      const auto& sizes = testing::split_sizes();
      std::vector<std::vector<float>> params, grads;
      std::vector<float*> p;
      std::vector<const float*> g;
      for (std::int64_t n : sizes) {
        params.emplace_back(static_cast<std::size_t>(n), 0.0f);
        grads.emplace_back(static_cast<std::size_t>(n), 1.0f);
      }
      for (std::size_t i = 0; i < sizes.size(); ++i) {
        p.push_back(params[i].data());
        g.push_back(grads[i].data());
      }
      PsWorker worker(t, config, sizes);
      worker.start(p);
      for (int c = 0; c < kClocks; ++c) worker.step(g, kWorkers, p);
      worker.finish();
    });
    const double mu = rule == AsyncMomentum::kKeep ? 0.9 : 0.4;
    double moved = 0;
    for (int i = 1; i <= kWorkers * kClocks; ++i) moved += (1 - std::pow(mu, i)) / (1 - mu);
    for (std::size_t e = 0; e < out.weights.size(); ++e) {
      EXPECT_NEAR(out.weights[e], -moved, 1e-4 * moved) << async_momentum_name(rule) << ", element " << e;
    }
  }
}

}  // namespace
}  // namespace dtrain::ps
