// The large-batch flags of `dtrain train`: --lr-scaling, --base-batch and --warmup-start
// (optim/lr_scaling.h). The rate given by --lr is the base batch's; the run's is scaled by the
// global batch, and a gradual warmup (--warmup-epochs) starts from the base batch's own rate.
#pragma once

#include <CLI/CLI.hpp>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>

#include "optim/optimizer.h"
#include "optim/schedule.h"

namespace dtrain::cli {

struct LargeBatchFlags {
  std::string lr_scaling = "none";
  std::int64_t base_batch = 0;  // 0: not given (the run's own global batch)
  double warmup_start = -1;     // < 0: not given
};

void add_large_batch_flags(CLI::App& command, LargeBatchFlags& flags);

// Scales optimizer.lr for `global_batch` and sets the schedule's base rate and warmup start
// (1 / k with --base-batch, else 0.1, unless --warmup-start); checks the warmup against `epochs`.
// Returns the log's fields: global_batch, base_batch, lr_scaling, lr (scaled), warmup_start.
// Throws InputError naming the flag for a bad value.
nlohmann::json apply_large_batch(const LargeBatchFlags& flags, std::int64_t global_batch, std::int64_t epochs,
                                 OptimizerConfig& optimizer, ScheduleConfig& schedule);

}  // namespace dtrain::cli
