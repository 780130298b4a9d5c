// Which statistics batch norm evaluates with (--bn-stats):
//   running      the moving averages training keeps (momentum 0.1), as PyTorch;
//   last-batch   Akiba et al. 2017's batch norm without moving averages: the last training
//                batch's statistics (momentum 1), averaged over the ranks before each evaluation
//                and checkpoint (ChainerMN's AllreducePersistent);
//   population[:N]  precise batch norm (Goyal et al. 2017, section 5.2; pycls's precise BN): after
//                each epoch, the statistics recomputed over N training batches (all of the training
//                set without N) and set as the running ones.
//
// The population pass: the training set in its natural order is cut into chunks of the per-rank
// (micro-)batch, and chunk j goes to rank j mod W, so the chunks and hence the statistics do not
// depend on the number of ranks. Each chunk runs forward in training mode (normalised with its own
// statistics, in ghost groups where training uses them) without gradients; every layer adds its
// input's per-channel count * mean and count * E[x^2], the sums are added over ranks in double,
// and mean = S1 / M, var = S2 / M - mean^2 (the biased variance of the layer's inputs over all
// the chunks). For the first batch-norm layer these are exactly the mean and biased variance of
// its input over the data; deeper layers see inputs normalised chunk by chunk, as in training.
#pragma once

#include <cstdint>
#include <string>

#include "autograd/ops/norm.h"
#include "data/loader.h"
#include "nn/module.h"
#include "train/trainer.h"

namespace dtrain {

enum class BnStatistics { kRunning, kLastBatch, kPopulation };

struct BnStatisticsConfig {
  BnStatistics mode = BnStatistics::kRunning;
  std::int64_t population_batches = 0;  // population: chunks over all ranks (0: the whole training set)
};

// "running", "last-batch", "population" or "population:N"; throws InputError naming --bn-stats.
BnStatisticsConfig parse_bn_statistics(const std::string& text);
std::string bn_statistics_name(const BnStatisticsConfig& config);

// Sets every batch norm's momentum to 1: its running statistics are the last batch's.
void keep_last_batch_statistics(Module& model);
// Replaces every batch norm's running statistics by their mean over `world` ranks (`sum` adds
// over them; empty: one process).
void average_statistics_over_ranks(Module& model, const ops::SumOverRanks& sum, int world);

struct PopulationPass {
  std::int64_t chunk = 0;   // samples per chunk: the per-rank (micro-)batch
  std::int64_t chunks = 0;  // over all ranks (0: every sample, the last chunk shorter)
  int rank = 0, world = 1;
  std::uint64_t epoch = 0;  // for the loader's augmentation
  LoaderOptions loader;
};
// Recomputes every batch norm's statistics over the chunks as above; returns the samples seen
// over all ranks. The model is left in the mode it was in.
std::int64_t recompute_population_statistics(Module& model, const Dataset& data, const PopulationPass& pass,
                                             const ops::SumOverRanks& sum);

// Applies the chosen statistics at the end of each epoch, before the evaluation and checkpoint
// (add it to the trainer before them). Every rank must have it.
class BnStatisticsExtension : public Extension {
 public:
  BnStatisticsExtension(Module& model, const Dataset& data, BnStatisticsConfig config, PopulationPass pass,
                        ops::SumOverRanks sum);
  void on_epoch_end(TrainerState& s) override;

 private:
  Module& model_;
  const Dataset& data_;
  BnStatisticsConfig config_;
  PopulationPass pass_;
  ops::SumOverRanks sum_;
};

}  // namespace dtrain
