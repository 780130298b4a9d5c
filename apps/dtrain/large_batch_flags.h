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
  // auto: as Goyal et al.'s recipe asks where --lr-scaling scales (zero-gamma on, no decay of
  // biases and batch-norm parameters), today's behaviour otherwise.
  std::string zero_gamma = "auto";
  std::string decay_bn_bias = "auto";
};

void add_large_batch_flags(CLI::App& command, LargeBatchFlags& flags);

// Scales optimizer.lr for `global_batch` and sets the schedule's base rate and warmup start
// (1 / k with --base-batch, else 0.1, unless --warmup-start); checks the warmup against `epochs`.
// Sets optimizer.decay_1d from --decay-bn-bias. Returns the log's fields: global_batch,
// base_batch, lr_scaling, scaled_lr, warmup_start, zero_gamma, decay_bn_bias.
// Throws InputError naming the flag for a bad value.
nlohmann::json apply_large_batch(const LargeBatchFlags& flags, std::int64_t global_batch, std::int64_t epochs,
                                 OptimizerConfig& optimizer, ScheduleConfig& schedule);

// Whether the residual blocks' last batch-norm scales start at 0 (--zero-gamma).
bool wants_zero_gamma(const LargeBatchFlags& flags);

}  // namespace dtrain::cli
