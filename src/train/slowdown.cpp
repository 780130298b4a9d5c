#include "train/slowdown.h"

#include <fmt/format.h>

#include <chrono>
#include <thread>

#include "core/error.h"
#include "core/random.h"
#include "core/timer.h"

namespace dtrain {
namespace {

// The stream of slowdown draws, apart from the seeds of shuffling and augmentation.
constexpr std::uint64_t kSlowdownStream = 0x5105d0e1ULL;

}  // namespace

SlowdownConfig::Mode slowdown_mode(const std::string& name) {
  if (name == "none") return SlowdownConfig::Mode::kNone;
  if (name == "persistent") return SlowdownConfig::Mode::kPersistent;
  if (name == "random") return SlowdownConfig::Mode::kRandom;
  throw InputError(fmt::format("unknown --slow-mode '{}'; valid: none, persistent, random", name));
}

std::string slowdown_mode_name(SlowdownConfig::Mode mode) {
  switch (mode) {
    case SlowdownConfig::Mode::kNone:
      return "none";
    case SlowdownConfig::Mode::kPersistent:
      return "persistent";
    case SlowdownConfig::Mode::kRandom:
      return "random";
  }
  return "none";
}

void validate(const SlowdownConfig& c, int workers) {
  if (c.mode == SlowdownConfig::Mode::kNone) return;
  if (!(c.factor >= 1.0)) {
    throw InputError(
        fmt::format("--slow-factor {} is below 1: a slowed step takes factor x its compute, e.g. 2", c.factor));
  }
  if (c.mode == SlowdownConfig::Mode::kPersistent && (c.rank < 0 || c.rank >= workers)) {
    throw InputError(fmt::format("--slow-rank {} is not a worker: give 0..{}", c.rank, workers - 1));
  }
  if (c.mode == SlowdownConfig::Mode::kRandom && !(c.probability > 0 && c.probability <= 1)) {
    throw InputError(
        fmt::format("--slow-prob {} is not in (0, 1]: --slow-mode random slows each worker-step "
                    "with that probability, e.g. 1/W",
                    c.probability));
  }
}

bool is_slowed(const SlowdownConfig& c, int rank, std::int64_t step) {
  switch (c.mode) {
    case SlowdownConfig::Mode::kNone:
      return false;
    case SlowdownConfig::Mode::kPersistent:
      return rank == c.rank;
    case SlowdownConfig::Mode::kRandom: {
      // One draw per (seed, rank, step): independent of the order ranks reach their steps.
      Rng rng(rng_key(c.seed, kSlowdownStream, static_cast<std::uint64_t>(rank), static_cast<std::uint64_t>(step)));
      return rng.uniform() < c.probability;
    }
  }
  return false;
}

StepResult SlowedUpdater::update(const Batch& batch, std::int64_t iteration) {
  double slept = 0;
  if (config_.active() && last_compute_ > 0 && is_slowed(config_, rank_, iteration)) {
    const Stopwatch timer;
    std::this_thread::sleep_for(std::chrono::duration<double>((config_.factor - 1.0) * last_compute_));
    slept = timer.seconds();
    ++slowed_steps_;
    slept_seconds_ += slept;
  }
  StepResult r = inner_->update(batch, iteration);
  last_compute_ = r.times.forward + r.times.backward + r.times.update;
  // The sleep stands for a slower forward pass: the step's phases add up to its time.
  r.times.forward += slept;
  return r;
}

}  // namespace dtrain
