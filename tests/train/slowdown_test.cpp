// Stragglers on purpose: who is slowed, how often, and that a slowed step sleeps (F - 1) times
// the compute of the step before.
#include "train/slowdown.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <thread>

#include "core/error.h"

namespace dtrain {
namespace {

TEST(Slowdown, PersistentSlowsOnlyItsRank) {
  SlowdownConfig c;
  c.mode = SlowdownConfig::Mode::kPersistent;
  c.rank = 2;
  c.factor = 2;
  for (std::int64_t step = 0; step < 50; ++step) {
    for (int rank = 0; rank < 4; ++rank) EXPECT_EQ(is_slowed(c, rank, step), rank == 2);
  }
}

TEST(Slowdown, RandomSlowsAboutTheGivenShareAndRepeats) {
  SlowdownConfig c;
  c.mode = SlowdownConfig::Mode::kRandom;
  c.factor = 2;
  c.probability = 1.0 / 3;
  c.seed = 7;
  const int n = 30000;
  int slowed = 0;
  for (int step = 0; step < n / 3; ++step) {
    for (int rank = 0; rank < 3; ++rank) slowed += is_slowed(c, rank, step) ? 1 : 0;
  }
  // Binomial(n, 1/3): sigma = sqrt(n p (1 - p)) = 82; 5 sigma.
  EXPECT_NEAR(slowed, n / 3.0, 5 * std::sqrt(n * (1.0 / 3) * (2.0 / 3)));
  // A function of (seed, rank, step) alone; another seed gives other steps.
  SlowdownConfig other = c;
  other.seed = 8;
  int differs = 0;
  for (int step = 0; step < 300; ++step) {
    EXPECT_EQ(is_slowed(c, 1, step), is_slowed(c, 1, step));
    if (is_slowed(c, 1, step) != is_slowed(other, 1, step)) ++differs;
  }
  EXPECT_GT(differs, 50);
}

TEST(Slowdown, BadSettingsNameTheFlag) {
  SlowdownConfig c;
  c.mode = SlowdownConfig::Mode::kPersistent;
  c.rank = 3;
  c.factor = 2;
  try {
    validate(c, 3);
    FAIL() << "rank 3 of 3 workers accepted";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("--slow-rank 3 is not a worker: give 0..2"), std::string::npos) << e.what();
  }
  c.rank = 0;
  c.factor = 0.5;
  EXPECT_THROW(validate(c, 3), InputError);
  c.factor = 2;
  EXPECT_NO_THROW(validate(c, 3));
  c.mode = SlowdownConfig::Mode::kRandom;
  c.probability = 0;
  EXPECT_THROW(validate(c, 3), InputError);
  c.probability = 1.5;
  EXPECT_THROW(validate(c, 3), InputError);
  EXPECT_THROW(slowdown_mode("sometimes"), InputError);
  EXPECT_EQ(slowdown_mode(slowdown_mode_name(SlowdownConfig::Mode::kRandom)), SlowdownConfig::Mode::kRandom);
}

// A step of fixed compute: sleeps `seconds` and reports them as forward.
class FixedStep : public Updater {
 public:
  explicit FixedStep(double seconds) : seconds_(seconds) {}
  StepResult update(const Batch&, std::int64_t) override {
    std::this_thread::sleep_for(std::chrono::duration<double>(seconds_));
    StepResult r;
    r.times.forward = seconds_;
    return r;
  }

 private:
  double seconds_;
};

TEST(Slowdown, ASlowedStepSleepsFactorMinusOneTimesTheComputeBefore) {
  SlowdownConfig c;
  c.mode = SlowdownConfig::Mode::kPersistent;
  c.rank = 1;
  c.factor = 3;
  const double compute = 0.004;
  SlowedUpdater slowed(std::make_unique<FixedStep>(compute), c, 1);
  SlowedUpdater spared(std::make_unique<FixedStep>(compute), c, 0);
  const Batch batch;
  const StepResult first = slowed.update(batch, 0);
  EXPECT_DOUBLE_EQ(first.times.forward, compute);  // nothing measured yet: not slowed
  for (std::int64_t step = 1; step <= 5; ++step) {
    const StepResult r = slowed.update(batch, step);
    // Slept (3 - 1) x 4 ms at least (a sleep may overrun, never undershoot), counted as forward.
    EXPECT_GE(r.times.forward, compute + 2 * compute * 0.99);
    EXPECT_GE(spared.update(batch, step).times.forward, compute);
  }
  EXPECT_EQ(slowed.slowed_steps(), 5);
  EXPECT_GE(slowed.slept_seconds(), 5 * 2 * compute * 0.99);
  EXPECT_EQ(spared.slowed_steps(), 0);
  EXPECT_EQ(spared.slept_seconds(), 0);
}

}  // namespace
}  // namespace dtrain
