#include "data/sampler.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>
#include <set>

#include "core/error.h"
#include "core/random.h"

namespace dtrain {
namespace {

std::vector<std::int64_t> flatten(const std::vector<std::vector<std::int64_t>>& batches) {
  std::vector<std::int64_t> out;
  for (const auto& b : batches) out.insert(out.end(), b.begin(), b.end());
  return out;
}

TEST(Sampler, PermutationDependsOnlyOnSeedAndEpoch) {
  const Sampler a(1000, SamplerConfig::train(10, 7));
  const Sampler b(1000, SamplerConfig::train(25, 7, 1, 2));  // other batch, rank and world size
  EXPECT_EQ(a.epoch_order(3), b.epoch_order(3));
  EXPECT_EQ(a.epoch_order(3), Sampler(1000, SamplerConfig::train(10, 7)).epoch_order(3));
  EXPECT_NE(a.epoch_order(3), a.epoch_order(4));
  EXPECT_NE(a.epoch_order(3), Sampler(1000, SamplerConfig::train(10, 8)).epoch_order(3));
  std::vector<std::int64_t> sorted = a.epoch_order(3);
  std::sort(sorted.begin(), sorted.end());
  std::vector<std::int64_t> iota(1000);
  std::iota(iota.begin(), iota.end(), 0);
  EXPECT_EQ(sorted, iota);
  EXPECT_NE(a.epoch_order(3), iota);
}

// Pins the generator: a change to the shuffle would silently change every training run.
TEST(Sampler, PermutationIsStableAcrossBuilds) {
  const Sampler s(10, SamplerConfig::train(1, 0));
  const std::vector<std::int64_t> order = s.epoch_order(0);
  Rng rng(rng_key(0, 0, 0, static_cast<std::uint64_t>(RngPurpose::kShuffle)));
  std::vector<std::int64_t> expected(10);
  std::iota(expected.begin(), expected.end(), 0);
  for (std::size_t i = 10; i > 1; --i) std::swap(expected[i - 1], expected[rng.below(i)]);
  EXPECT_EQ(order, expected);
  EXPECT_EQ(mix64(0), 0u);
  EXPECT_EQ(Rng(0).next(), 0xe220a8397b1dcdafULL);  // SplitMix64's first output from state 0
}

TEST(Sampler, RngBelowIsUniform) {
  Rng rng(123);
  std::vector<int> counts(7, 0);
  const int n = 70000;
  for (int i = 0; i < n; ++i) ++counts[rng.below(7)];
  for (int c : counts) EXPECT_NEAR(c, n / 7.0, 400);
}

TEST(Sampler, TrainEveryRankGetsSameBatchCountAndDisjointSamples) {
  for (std::int64_t n : {1, 7, 100, 1001}) {
    for (int w = 1; w <= 9; ++w) {
      for (std::int64_t b : {1, 3, 8}) {
        if (n < w * b) {
          EXPECT_THROW(Sampler(n, SamplerConfig::train(b, 1, 0, w)), InputError) << n << " " << w << " " << b;
          continue;
        }
        std::set<std::int64_t> seen;
        for (int r = 0; r < w; ++r) {
          const Sampler s(n, SamplerConfig::train(b, 1, r, w));
          const auto batches = s.epoch_batches(2);
          EXPECT_EQ(static_cast<std::int64_t>(batches.size()), n / (w * b));
          EXPECT_EQ(s.batches_per_epoch(), n / (w * b));
          for (const auto& batch : batches) EXPECT_EQ(static_cast<std::int64_t>(batch.size()), b);
          for (std::int64_t i : flatten(batches)) EXPECT_TRUE(seen.insert(i).second) << "sample twice: " << i;
        }
        // Only the remainder is dropped.
        EXPECT_EQ(static_cast<std::int64_t>(seen.size()), n - n % (w * b));
      }
    }
  }
}

// The W batches of one step are the global batch a single process with batch W*B takes.
TEST(Sampler, TrainStepAcrossRanksEqualsSingleProcessGlobalBatch) {
  const int w = 4;
  const std::int64_t b = 8;
  const Sampler single(1000, SamplerConfig::train(w * b, 5));
  const auto global = single.epoch_batches(1);
  for (int r = 0; r < w; ++r) {
    const auto local = Sampler(1000, SamplerConfig::train(b, 5, r, w)).epoch_batches(1);
    ASSERT_EQ(local.size(), global.size());
    for (std::size_t s = 0; s < local.size(); ++s) {
      EXPECT_TRUE(std::equal(local[s].begin(), local[s].end(), global[s].begin() + r * b));
    }
  }
}

TEST(Sampler, EvalVisitsEverySampleExactlyOnceAcrossRanks) {
  for (std::int64_t n : {1, 2, 9, 10, 37, 1000}) {
    for (int w = 1; w <= 9; ++w) {
      for (std::int64_t b : {1, 4, 64, 5000}) {
        if (w > n) {
          EXPECT_THROW(Sampler(n, SamplerConfig::eval(b, 0, w)), InputError);
          continue;
        }
        std::vector<int> visits(static_cast<std::size_t>(n), 0);
        std::int64_t min_batches = 1 << 30, max_batches = 0, min_samples = n, max_samples = 0;
        for (int r = 0; r < w; ++r) {
          const Sampler s(n, SamplerConfig::eval(b, r, w));
          const auto batches = s.epoch_batches(0);
          EXPECT_EQ(static_cast<std::int64_t>(batches.size()), s.batches_per_epoch());
          const auto samples = flatten(batches);
          EXPECT_EQ(static_cast<std::int64_t>(samples.size()), s.samples_per_epoch());
          for (const auto& batch : batches) {
            EXPECT_GE(static_cast<std::int64_t>(batch.size()), 1);
            EXPECT_LE(static_cast<std::int64_t>(batch.size()), b);
          }
          for (std::int64_t i : samples) ++visits[static_cast<std::size_t>(i)];
          min_batches = std::min<std::int64_t>(min_batches, static_cast<std::int64_t>(batches.size()));
          max_batches = std::max<std::int64_t>(max_batches, static_cast<std::int64_t>(batches.size()));
          min_samples = std::min<std::int64_t>(min_samples, static_cast<std::int64_t>(samples.size()));
          max_samples = std::max<std::int64_t>(max_samples, static_cast<std::int64_t>(samples.size()));
        }
        for (std::int64_t i = 0; i < n; ++i) EXPECT_EQ(visits[static_cast<std::size_t>(i)], 1) << i;
        EXPECT_LE(max_batches - min_batches, 1) << n << " " << w << " " << b;
        EXPECT_LE(max_samples - min_samples, 1) << n << " " << w << " " << b;
        EXPECT_GE(min_samples, 1);
      }
    }
  }
}

TEST(Sampler, EvalIsInNaturalOrderAndShuffledEvalStillCoversAll) {
  const auto batches = Sampler(10, SamplerConfig::eval(4)).epoch_batches(0);
  ASSERT_EQ(batches.size(), 3u);
  EXPECT_EQ(batches[0], (std::vector<std::int64_t>{0, 1, 2, 3}));
  EXPECT_EQ(batches[2], (std::vector<std::int64_t>{8, 9}));
  SamplerConfig cfg = SamplerConfig::eval(3, 1, 3);
  cfg.shuffle = true;
  std::set<std::int64_t> all;
  for (int r = 0; r < 3; ++r) {
    cfg.rank = r;
    for (std::int64_t i : flatten(Sampler(11, cfg).epoch_batches(4))) all.insert(i);
  }
  EXPECT_EQ(all.size(), 11u);
}

TEST(Sampler, InvalidConfigurationsSayWhy) {
  auto message = [](std::int64_t n, SamplerConfig c) -> std::string {
    try {
      Sampler s(n, c);
    } catch (const InputError& e) {
      return e.what();
    }
    return "no error";
  };
  EXPECT_NE(message(5, SamplerConfig::eval(1, 0, 8)).find("world size 8 is larger than the 5 samples"),
            std::string::npos);
  EXPECT_NE(message(0, SamplerConfig::eval(1)).find("larger than the 0 samples"), std::string::npos);
  EXPECT_NE(message(100, SamplerConfig::train(64, 0, 0, 2)).find("64 x world size 2 = 128 is more than the 100"),
            std::string::npos);
  EXPECT_NE(message(10, SamplerConfig::train(0)).find("batch size must be at least 1"), std::string::npos);
  EXPECT_NE(message(10, SamplerConfig::train(1, 0, 3, 3)).find("rank 3 is outside [0, 3)"), std::string::npos);
  EXPECT_NE(message(10, SamplerConfig::train(1, 0, 0, 0)).find("world size must be at least 1"), std::string::npos);
}

TEST(Sampler, BatchOfOneAndWholeDataset) {
  const Sampler one(5, SamplerConfig::train(1, 3));
  EXPECT_EQ(one.batches_per_epoch(), 5);
  const Sampler whole(5, SamplerConfig::train(5, 3));
  ASSERT_EQ(whole.epoch_batches(0).size(), 1u);
  EXPECT_EQ(whole.epoch_batches(0)[0], whole.epoch_order(0));
}

}  // namespace
}  // namespace dtrain
