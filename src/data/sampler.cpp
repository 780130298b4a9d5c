#include "data/sampler.h"

#include <algorithm>
#include <numeric>

#include "core/error.h"
#include "core/random.h"

namespace dtrain {

Sampler::Sampler(std::int64_t num_samples, SamplerConfig config) : num_samples_(num_samples), config_(config) {
  const std::int64_t b = config_.batch_size;
  const std::int64_t w = config_.world_size;
  if (b < 1) throw InputError(fmt::format("batch size must be at least 1, got {}", b));
  if (w < 1) throw InputError(fmt::format("world size must be at least 1, got {}", w));
  if (config_.rank < 0 || config_.rank >= w) {
    throw InputError(fmt::format("rank {} is outside [0, {}) for world size {}", config_.rank, w, w));
  }
  if (num_samples_ < 0) throw InputError(fmt::format("number of samples is negative: {}", num_samples_));
  if (w > num_samples_) {
    throw InputError(
        fmt::format("world size {} is larger than the {} samples of the dataset: some ranks would get "
                    "no data; use at most {} ranks or more data",
                    w, num_samples_, num_samples_));
  }
  if (config_.mode == SamplerMode::kTrain) {
    batches_per_epoch_ = num_samples_ / (w * b);
    samples_per_epoch_ = batches_per_epoch_ * b;
    if (batches_per_epoch_ == 0) {
      throw InputError(
          fmt::format("batch size {} x world size {} = {} is more than the {} training samples: not one "
                      "full batch per rank; use a smaller batch or fewer ranks",
                      b, w, w * b, num_samples_));
    }
  } else {
    samples_per_epoch_ = shard_begin(config_.rank + 1) - shard_begin(config_.rank);
    batches_per_epoch_ = (samples_per_epoch_ + b - 1) / b;
  }
}

std::int64_t Sampler::shard_begin(int rank) const {
  // The first N mod W shards get one sample more.
  const std::int64_t w = config_.world_size;
  const std::int64_t base = num_samples_ / w;
  const std::int64_t extra = num_samples_ % w;
  return rank * base + std::min<std::int64_t>(rank, extra);
}

std::vector<std::int64_t> Sampler::epoch_order(std::int64_t epoch) const {
  std::vector<std::int64_t> order(static_cast<std::size_t>(num_samples_));
  std::iota(order.begin(), order.end(), std::int64_t{0});
  if (!config_.shuffle) return order;
  // Fisher-Yates with our own generator: the permutation is a function of (seed, epoch) alone.
  Rng rng(
      rng_key(config_.seed, static_cast<std::uint64_t>(epoch), 0, static_cast<std::uint64_t>(RngPurpose::kShuffle)));
  for (std::size_t i = order.size(); i > 1; --i) {
    const std::size_t j = static_cast<std::size_t>(rng.below(i));
    std::swap(order[i - 1], order[j]);
  }
  return order;
}

std::vector<std::vector<std::int64_t>> Sampler::epoch_batches(std::int64_t epoch) const {
  const std::vector<std::int64_t> order = epoch_order(epoch);
  const std::int64_t b = config_.batch_size;
  std::vector<std::vector<std::int64_t>> batches;
  batches.reserve(static_cast<std::size_t>(batches_per_epoch_));
  if (config_.mode == SamplerMode::kTrain) {
    const std::int64_t w = config_.world_size;
    for (std::int64_t s = 0; s < batches_per_epoch_; ++s) {
      const auto first = order.begin() + (s * w + config_.rank) * b;
      batches.emplace_back(first, first + b);
    }
  } else {
    const std::int64_t begin = shard_begin(config_.rank);
    const std::int64_t end = shard_begin(config_.rank + 1);
    for (std::int64_t i = begin; i < end; i += b) {
      batches.emplace_back(order.begin() + i, order.begin() + std::min(i + b, end));
    }
  }
  return batches;
}

std::string Sampler::describe() const {
  return fmt::format("{} sampler: {} samples, batch {}, rank {} of {}, {} batches ({} samples) per epoch{}",
                     config_.mode == SamplerMode::kTrain ? "train" : "eval", num_samples_, config_.batch_size,
                     config_.rank, config_.world_size, batches_per_epoch_, samples_per_epoch_,
                     config_.shuffle ? fmt::format(", shuffled with seed {}", config_.seed) : "");
}

}  // namespace dtrain
