// The straggler flags of `dtrain train` (--slow-rank, --slow-factor, --slow-mode, --slow-prob):
// a worker slowed on purpose (train/slowdown.h), for experiments with synchronisation rules.
#pragma once

#include <CLI/CLI.hpp>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "perfmodel/sync_rules.h"
#include "train/slowdown.h"

namespace dtrain::cli {

struct SlowdownFlags {
  int rank = -1;
  double factor = 2.0;
  std::string mode;  // "" : persistent with --slow-rank, else none
  double probability = 0;
};

void add_slowdown_flags(CLI::App& command, SlowdownFlags& flags);

// The configuration the flags ask for, checked against `workers` (throws InputError naming the
// flag at fault); mode none when no straggler was asked for.
SlowdownConfig slowdown_config(const SlowdownFlags& flags, int workers, std::uint64_t seed);

// `updater` wrapped so that worker `rank` is slowed as configured; unchanged when nothing is.
std::unique_ptr<Updater> with_slowdown(std::unique_ptr<Updater> updater, const SlowdownConfig& config, int rank);

// The same slowdown as the performance model's worker speeds, for dtrain train --profile.
perf::WorkerSpeeds worker_speeds(const SlowdownConfig& config, int workers);

// {"mode", "rank", "factor", "probability"} for the metrics log's config record.
nlohmann::json slowdown_json(const SlowdownConfig& config);

}  // namespace dtrain::cli
