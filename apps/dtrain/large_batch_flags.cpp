#include "apps/dtrain/large_batch_flags.h"

#include <fmt/format.h>

#include <algorithm>

#include "core/error.h"
#include "optim/lr_scaling.h"

namespace dtrain::cli {

void add_large_batch_flags(CLI::App& command, LargeBatchFlags& flags) {
  command
      .add_option("--lr-scaling", flags.lr_scaling,
                  "Scale --lr by the global batch (every worker's samples per step) over --base-batch: linear "
                  "(Goyal et al. 2017), sqrt or none")
      ->capture_default_str();
  command.add_option("--base-batch", flags.base_batch,
                     "The global batch --lr was tuned for (default: this run's, so nothing is scaled)");
  command
      .add_option("--zero-gamma", flags.zero_gamma,
                  "Start each residual block's last batch-norm scale at 0 (Goyal et al.): on, off, or auto (on with "
                  "--lr-scaling linear|sqrt)")
      ->capture_default_str();
  command
      .add_option("--decay-bn-bias", flags.decay_bn_bias,
                  "Weight decay on biases and batch-norm parameters (sgd, rmsprop, adam): on, off, or auto (off with "
                  "--lr-scaling linear|sqrt, as Goyal et al.)")
      ->capture_default_str();
  command.add_option("--warmup-start", flags.warmup_start,
                     "--warmup-epochs starts at this factor of the rate (default: 1/k with --base-batch, k = global "
                     "batch / base batch, as Goyal et al.; else 0.1)");
}

namespace {

// on / off / auto (the recipe's choice where the rate is scaled).
bool recipe_choice(const std::string& value, const char* flag, bool scaled, bool recipe) {
  if (value == "on") return true;
  if (value == "off") return false;
  if (value == "auto") return scaled ? recipe : !recipe;
  throw InputError(fmt::format("{} must be on, off or auto, got '{}'", flag, value));
}

}  // namespace

bool wants_zero_gamma(const LargeBatchFlags& f) {
  return recipe_choice(f.zero_gamma, "--zero-gamma", parse_lr_scaling(f.lr_scaling) != LrScaling::kNone, true);
}

nlohmann::json apply_large_batch(const LargeBatchFlags& f, std::int64_t global_batch, std::int64_t epochs,
                                 OptimizerConfig& optimizer, ScheduleConfig& schedule) {
  const LrScaling rule = parse_lr_scaling(f.lr_scaling);
  if (f.base_batch < 0) {
    throw InputError(fmt::format("--base-batch must be >= 1, got {}", f.base_batch));
  }
  if (rule != LrScaling::kNone && f.base_batch == 0) {
    throw InputError(
        fmt::format("--lr-scaling {} scales from the batch --lr was tuned for: give --base-batch N", f.lr_scaling));
  }
  const std::int64_t base = f.base_batch > 0 ? f.base_batch : global_batch;
  const double k = static_cast<double>(global_batch) / static_cast<double>(base);
  optimizer.lr = scaled_lr(rule, optimizer.lr, global_batch, base);
  schedule.base_lr = optimizer.lr;
  if (f.warmup_start >= 0) {
    if (f.warmup_start > 1) throw InputError(fmt::format("--warmup-start must be in [0, 1], got {}", f.warmup_start));
    schedule.warmup_start_factor = f.warmup_start;
  } else if (f.base_batch > 0) {
    schedule.warmup_start_factor = std::min(1.0, 1.0 / k);
  }
  if (schedule.warmup_epochs >= static_cast<double>(epochs) && schedule.warmup_epochs > 0) {
    throw InputError(
        fmt::format("--warmup-epochs {} is at least the whole run (--epochs {}): the rate would never "
                    "reach --lr; warm up for fewer epochs",
                    schedule.warmup_epochs, epochs));
  }
  optimizer.decay_1d = recipe_choice(f.decay_bn_bias, "--decay-bn-bias", rule != LrScaling::kNone, false);
  return {{"global_batch", global_batch},
          {"base_batch", base},
          {"lr_scaling", lr_scaling_name(rule)},
          {"scaled_lr", optimizer.lr},
          {"warmup_start", schedule.warmup_start_factor},
          {"zero_gamma", wants_zero_gamma(f)},
          {"decay_bn_bias", optimizer.decay_1d}};
}

}  // namespace dtrain::cli
