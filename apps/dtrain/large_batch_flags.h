// The large-batch flags of `dtrain train`: --lr-scaling, --base-batch and --warmup-start
// (optim/lr_scaling.h). The rate given by --lr is the base batch's; the run's is scaled by the
// global batch, and a gradual warmup (--warmup-epochs) starts from the base batch's own rate.
#pragma once

#include <CLI/CLI.hpp>
#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "optim/optimizer.h"
#include "optim/schedule.h"
#include "train/bn_statistics.h"
#include "train/evaluator.h"

namespace dtrain::cli {

struct LargeBatchFlags {
  std::string lr_scaling = "none";
  std::int64_t base_batch = 0;  // 0: not given (the run's own global batch)
  double warmup_start = -1;     // < 0: not given
  // auto: as Goyal et al.'s recipe asks where --lr-scaling scales (zero-gamma on, no decay of
  // biases and batch-norm parameters), today's behaviour otherwise.
  std::string zero_gamma = "auto";
  std::string decay_bn_bias = "auto";
  std::string bn_stats = "running";  // train/bn_statistics.h
  bool sync_bn = false;
  std::int64_t bn_group = 0;  // ghost batch norm's samples per group (0: the per-rank batch)
};

// Also the flags of rmsprop-warmup (--rmsprop-lr, --transition-centre, --transition-period), which
// land in `optimizer`.
void add_large_batch_flags(CLI::App& command, LargeBatchFlags& flags, OptimizerConfig& optimizer);

// Scales optimizer.lr for `global_batch` and sets the schedule's base rate and warmup start
// (1 / k with --base-batch, else 0.1, unless --warmup-start); checks the warmup against `epochs`.
// Sets optimizer.decay_1d from --decay-bn-bias. Returns the log's fields: global_batch,
// base_batch, lr_scaling, scaled_lr, warmup_start, zero_gamma, decay_bn_bias.
// Throws InputError naming the flag for a bad value.
nlohmann::json apply_large_batch(const LargeBatchFlags& flags, std::int64_t global_batch, std::int64_t epochs,
                                 OptimizerConfig& optimizer, ScheduleConfig& schedule);

// Whether the residual blocks' last batch-norm scales start at 0 (--zero-gamma).
bool wants_zero_gamma(const LargeBatchFlags& flags);

// Where batch norm's statistics come from in a run: the flags checked against it.
struct BatchNormRun {
  std::int64_t micro_batch = 0;  // samples per rank and forward pass (--batch / --accumulate)
  int rank = 0, world = 1;       // the ranks that train
  bool data_parallel = false;    // allreduce mode under mpirun (sync batch norm needs it)
  bool parameter_server = false;
  SumAcrossRanks exact_sum;  // over the ranks that train (comm/exact_sum.h); empty: one process
  LoaderOptions loading;     // the training data's, for the population pass
};
// Sets --bn-group on `model`'s batch norms (--sync-bn is DataParallelConfig::sync_batch_norm's) and
// returns the extension that applies
// --bn-stats (null for running; add it before the evaluation and the checkpoint). Throws
// InputError naming the flag for a group that does not divide the micro-batch, a group of 1, and
// --sync-bn without data-parallel ranks or with --bn-group.
std::unique_ptr<Extension> apply_batch_norm_flags(const LargeBatchFlags& flags, Module& model, const Dataset& train,
                                                  const BatchNormRun& run);
// Throws the same errors before any data is loaded, where they do not depend on the model.
void check_batch_norm_flags(const LargeBatchFlags& flags, const BatchNormRun& run);

}  // namespace dtrain::cli
