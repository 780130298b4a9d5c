#include "apps/dtrain/large_batch_flags.h"

#include <fmt/format.h>

#include <algorithm>

#include "core/error.h"
#include "nn/batch_norm.h"
#include "optim/lr_scaling.h"

namespace dtrain::cli {

void add_large_batch_flags(CLI::App& command, LargeBatchFlags& flags, OptimizerConfig& optimizer) {
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
  command
      .add_option("--bn-stats", flags.bn_stats,
                  "Statistics batch norm evaluates with: running (moving averages), last-batch (the last training "
                  "batch's, averaged over ranks: Akiba et al.), population[:N] (recomputed over N training batches, or "
                  "the whole set, after each epoch: precise BN)")
      ->capture_default_str();
  command.add_flag("--sync-bn", flags.sync_bn,
                   "Batch norm over the global batch: statistics summed over the ranks (as SyncBatchNorm)");
  command.add_option("--bn-group", flags.bn_group,
                     "Ghost batch norm (Hoffer et al. 2017): training statistics over groups of N samples of the "
                     "per-rank batch (0: the whole per-rank batch)");
  command
      .add_option("--rmsprop-lr", optimizer.rmsprop_lr,
                  "rmsprop-warmup: the rate of its RMSprop share, (1 - a_sgd) * this / (sqrt(m) + eps) (Akiba et al.)")
      ->capture_default_str();
  command
      .add_option("--transition-centre", optimizer.transition_centre,
                  "rmsprop-warmup: the epoch where a_sgd, SGD's share, is 1/2 (Akiba et al.: 10 of 90 epochs; scale it "
                  "with shorter runs)")
      ->capture_default_str();
  command
      .add_option("--transition-period", optimizer.transition_period,
                  "rmsprop-warmup: a_sgd reaches 1 at centre + period / 2 (Akiba et al.: 5 of 90 epochs)")
      ->capture_default_str();
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
  nlohmann::json record{{"global_batch", global_batch},
                        {"base_batch", base},
                        {"lr_scaling", lr_scaling_name(rule)},
                        {"scaled_lr", optimizer.lr},
                        {"warmup_start", schedule.warmup_start_factor},
                        {"zero_gamma", wants_zero_gamma(f)},
                        {"decay_bn_bias", optimizer.decay_1d}};
  record["bn_stats"] = bn_statistics_name(parse_bn_statistics(f.bn_stats));
  record["sync_bn"] = f.sync_bn;
  record["bn_group"] = f.bn_group;
  if (optimizer.name == "rmsprop-warmup") {
    record["rmsprop_lr"] = optimizer.rmsprop_lr;
    record["transition_centre"] = optimizer.transition_centre;
    record["transition_period"] = optimizer.transition_period;
  }
  return record;
}

void check_batch_norm_flags(const LargeBatchFlags& f, const BatchNormRun& run) {
  (void)parse_bn_statistics(f.bn_stats);
  if (f.bn_group < 0) throw InputError(fmt::format("--bn-group must be >= 0 samples, got {}", f.bn_group));
  if (f.bn_group == 1) {
    throw InputError(
        "--bn-group 1 normalises every sample by itself (a fully connected layer's variance is then 0): give a group "
        "of at least 2 samples, or 0 for the whole per-rank batch");
  }
  if (f.bn_group > 0 && run.micro_batch % f.bn_group != 0) {
    throw InputError(fmt::format(
        "--bn-group {} does not divide the per-rank batch of {} samples{}: give a divisor of it", f.bn_group,
        run.micro_batch, run.data_parallel ? " per forward pass (--batch / --accumulate)" : ""));
  }
  if (f.sync_bn && f.bn_group > 0) {
    throw InputError(
        "--sync-bn takes batch norm's statistics over the global batch and --bn-group over groups of "
        "the per-rank one: give one of them");
  }
  if (f.sync_bn && !run.data_parallel) {
    throw InputError(
        run.parameter_server
            ? "--sync-bn sums statistics over data-parallel ranks, and parameter-server workers share no "
              "collective: use --mode allreduce with it"
            : "--sync-bn sums statistics over ranks: start dtrain under mpirun with 2 or more ranks, or drop it");
  }
}

std::unique_ptr<Extension> apply_batch_norm_flags(const LargeBatchFlags& f, Module& model, const Dataset& train,
                                                  const BatchNormRun& run) {
  check_batch_norm_flags(f, run);
  for (BatchNorm* bn : batch_norms(model)) bn->set_group(f.bn_group);  // --sync-bn: the updater's (data_parallel.h)
  const BnStatisticsConfig stats = parse_bn_statistics(f.bn_stats);
  if (stats.mode == BnStatistics::kRunning) return nullptr;
  PopulationPass pass;
  pass.chunk = run.micro_batch;
  pass.rank = run.rank;
  pass.world = run.world;
  pass.loader = run.loading;
  return std::make_unique<BnStatisticsExtension>(model, train, stats, pass, run.exact_sum);
}

}  // namespace dtrain::cli
