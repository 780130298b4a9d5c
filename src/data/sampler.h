// Which samples each rank sees in each epoch, in which batches.
//
// The order of an epoch is a permutation of all samples that depends only on (seed, epoch), so
// every rank computes the same permutation without communicating, and a rerun reproduces it.
//
// Training: step s of rank r takes the batch perm[(s*W + r)*B, (s*W + r + 1)*B) of the
// permutation (W ranks, B samples per rank and step). The W batches of one step are thus a
// contiguous chunk of W*B samples, the global batch a single process with batch W*B would take at
// that step, which makes data-parallel runs comparable with single-process ones. Every rank gets
// floor(N / (W*B)) batches; the remaining N mod (W*B) samples (different ones each epoch) are
// dropped so that no rank waits on a short batch or an extra step.
//
// Evaluation: the (unshuffled by default) order is split into W contiguous shards whose sizes
// differ by at most one sample, each cut into batches of B with a shorter last one. Every sample
// is visited exactly once across ranks, and batch counts differ by at most one between ranks.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace dtrain {

enum class SamplerMode { kTrain, kEval };

struct SamplerConfig {
  SamplerMode mode = SamplerMode::kTrain;
  std::int64_t batch_size = 32;  // per rank
  bool shuffle = true;           // permute every epoch (eval() turns it off: the natural order)
  std::uint64_t seed = 0;
  int rank = 0;
  int world_size = 1;

  static SamplerConfig train(std::int64_t batch, std::uint64_t seed = 0, int rank = 0, int world_size = 1) {
    return {SamplerMode::kTrain, batch, true, seed, rank, world_size};
  }
  static SamplerConfig eval(std::int64_t batch, int rank = 0, int world_size = 1) {
    return {SamplerMode::kEval, batch, false, 0, rank, world_size};
  }
};

class Sampler {
 public:
  // Throws InputError for a batch size < 1, a rank outside [0, world_size), a world size larger
  // than the number of samples, or (training) too few samples for one batch per rank.
  Sampler(std::int64_t num_samples, SamplerConfig config);

  // This rank's batches of an epoch, as sample indices.
  std::vector<std::vector<std::int64_t>> epoch_batches(std::int64_t epoch) const;
  // The order of all samples in an epoch (the identity when not shuffling).
  std::vector<std::int64_t> epoch_order(std::int64_t epoch) const;

  // Batches this rank gets per epoch (the same every epoch).
  std::int64_t batches_per_epoch() const { return batches_per_epoch_; }
  // Samples this rank visits per epoch.
  std::int64_t samples_per_epoch() const { return samples_per_epoch_; }
  std::int64_t num_samples() const { return num_samples_; }
  const SamplerConfig& config() const { return config_; }
  std::string describe() const;

 private:
  // This rank's slice [begin, end) of the epoch order (evaluation).
  std::int64_t shard_begin(int rank) const;

  std::int64_t num_samples_;
  SamplerConfig config_;
  std::int64_t batches_per_epoch_ = 0;
  std::int64_t samples_per_epoch_ = 0;
};

}  // namespace dtrain
