// Stragglers on purpose, for experiments with synchronisation rules and for tests: a worker whose
// step is slowed by a factor F sleeps (F - 1) times its own compute before the step, so a slowed
// step takes F times as long and the sleep frees the core for the other ranks (a spinning
// straggler would steal it from them on an oversubscribed host).
//
//   persistent   worker `rank` is slowed at every step (`--slow-rank R --slow-factor F`);
//   random       each worker-step is slowed with probability p (`--slow-mode random --slow-prob
//                P`), drawn from (seed, rank, step) alone, so runs repeat and resumed runs agree;
//                p = 1/W puts one straggler in an average step (transient stragglers, where a
//                bounded-staleness rule gains over bulk-synchronous steps; persistent ones gain
//                nothing from it).
//
// The compute the sleep scales is the previous step's forward, backward and update (the step
// about to run is not measured yet); the first step of a run is never slowed.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "train/updater.h"

namespace dtrain {

struct SlowdownConfig {
  enum class Mode { kNone, kPersistent, kRandom };
  Mode mode = Mode::kNone;
  int rank = -1;           // kPersistent: the slowed worker
  double factor = 1.0;     // a slowed step takes factor x its compute
  double probability = 0;  // kRandom: the chance of each worker-step
  std::uint64_t seed = 0;

  bool active() const { return mode != Mode::kNone && factor > 1.0; }
};

// "none", "persistent", "random"; throws InputError naming the valid ones.
SlowdownConfig::Mode slowdown_mode(const std::string& name);
std::string slowdown_mode_name(SlowdownConfig::Mode mode);
// Throws InputError when the settings contradict each other (a factor below 1, a probability
// outside [0, 1], a persistent rank outside the workers, a random mode without a probability).
void validate(const SlowdownConfig& c, int workers);

// Whether worker `rank` is slowed at global step `step`.
bool is_slowed(const SlowdownConfig& c, int rank, std::int64_t step);

// Wraps the updater of worker `rank`: sleeps before each slowed step, and counts the steps it
// slowed and the seconds it slept.
class SlowedUpdater : public Updater {
 public:
  SlowedUpdater(std::unique_ptr<Updater> inner, SlowdownConfig config, int rank)
      : inner_(std::move(inner)), config_(config), rank_(rank) {}
  StepResult update(const Batch& batch, std::int64_t iteration) override;
  void flush() override { inner_->flush(); }

  Updater& inner() { return *inner_; }
  std::int64_t slowed_steps() const { return slowed_steps_; }
  double slept_seconds() const { return slept_seconds_; }

 private:
  std::unique_ptr<Updater> inner_;
  SlowdownConfig config_;
  int rank_;
  double last_compute_ = 0;
  std::int64_t slowed_steps_ = 0;
  double slept_seconds_ = 0;
};

}  // namespace dtrain
