#include "apps/dtrain/slowdown_flags.h"

#include <algorithm>

#include "core/error.h"

namespace dtrain::cli {

void add_slowdown_flags(CLI::App& command, SlowdownFlags& flags) {
  command.add_option("--slow-rank", flags.rank,
                     "Straggler on purpose: this worker's every step takes --slow-factor x its compute (it sleeps "
                     "the difference, freeing its core)");
  command.add_option("--slow-factor", flags.factor, "How much slower a slowed step is (>= 1)")->capture_default_str();
  command.add_option("--slow-mode", flags.mode,
                     "persistent (--slow-rank's every step), random (every worker-step with probability "
                     "--slow-prob; drawn from the seed, rank and step) or none; default persistent with --slow-rank");
  command.add_option("--slow-prob", flags.probability, "--slow-mode random: the chance a worker-step is slowed");
}

SlowdownConfig slowdown_config(const SlowdownFlags& f, int workers, std::uint64_t seed) {
  SlowdownConfig c;
  c.mode = f.mode.empty() ? (f.rank >= 0 ? SlowdownConfig::Mode::kPersistent : SlowdownConfig::Mode::kNone)
                          : slowdown_mode(f.mode);
  if (c.mode != SlowdownConfig::Mode::kPersistent && f.rank >= 0) {
    throw InputError("--slow-rank goes with --slow-mode persistent (random mode slows any worker; use --slow-prob)");
  }
  if (c.mode != SlowdownConfig::Mode::kRandom && f.probability != 0) {
    throw InputError("--slow-prob goes with --slow-mode random");
  }
  c.rank = f.rank;
  c.factor = f.factor;
  c.probability = f.probability;
  c.seed = seed;
  validate(c, workers);
  return c;
}

std::unique_ptr<Updater> with_slowdown(std::unique_ptr<Updater> updater, const SlowdownConfig& config, int rank) {
  if (!config.active()) return updater;
  return std::make_unique<SlowedUpdater>(std::move(updater), config, rank);
}

perf::WorkerSpeeds worker_speeds(const SlowdownConfig& c, int workers) {
  perf::WorkerSpeeds s;
  s.workers = workers;
  if (!c.active()) return s;
  s.straggler = c.mode == SlowdownConfig::Mode::kPersistent ? perf::WorkerSpeeds::Straggler::kPersistent
                                                            : perf::WorkerSpeeds::Straggler::kRandom;
  s.factor = c.factor;
  s.slow_worker = std::max(0, c.rank);
  s.probability = c.probability;
  s.seed = c.seed;
  return s;
}

nlohmann::json slowdown_json(const SlowdownConfig& c) {
  nlohmann::json j = {{"mode", slowdown_mode_name(c.mode)}, {"factor", c.factor}};
  if (c.mode == SlowdownConfig::Mode::kPersistent) j["rank"] = c.rank;
  if (c.mode == SlowdownConfig::Mode::kRandom) j["probability"] = c.probability;
  return j;
}

}  // namespace dtrain::cli
