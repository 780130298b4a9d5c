#include "data/loader.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <thread>

#include "core/error.h"
#include "core/timer.h"
#include "tensor/allocator.h"

namespace dtrain {
namespace {

bool same_batch(const Batch& a, const Batch& b) {
  const std::int32_t* ya = a.y.data<std::int32_t>();
  const std::int32_t* yb = b.y.data<std::int32_t>();
  return a.indices == b.indices && a.x.shape() == b.x.shape() && a.y.shape() == b.y.shape() &&
         a.x.to_vector() == b.x.to_vector() && std::equal(ya, ya + a.y.numel(), yb);
}

LoaderOptions full_options(int prefetch) {
  LoaderOptions o;
  o.prefetch = prefetch;
  o.augment = parse_augment("flip,translate:2,rotate:10,noise:0.05");
  o.normalization = {{0.4f, 0.5f, 0.6f}, {0.2f, 0.25f, 0.3f}};
  o.seed = 17;
  return o;
}

TEST(Loader, BatchHoldsConvertedPixelsAndLabels) {
  const Dataset ds = make_synthetic_dataset(20, 1, 4, 4, 10, 1);
  const Batch b = prepare_batch(ds, std::vector<std::int64_t>{5, 2}, 0, LoaderOptions{});
  EXPECT_EQ(b.x.shape(), (Shape{2, 1, 4, 4}));
  EXPECT_EQ(b.x.dtype(), DType::kF32);
  EXPECT_EQ(b.y.shape(), (Shape{2}));
  EXPECT_EQ(b.y.dtype(), DType::kI32);
  const float* x = b.x.data<float>();
  for (int k = 0; k < 16; ++k) {
    EXPECT_EQ(x[k], static_cast<float>(ds.image(5)[k]) / 255.0f);
    EXPECT_EQ(x[16 + k], static_cast<float>(ds.image(2)[k]) / 255.0f);
  }
  EXPECT_EQ(b.y.data<std::int32_t>()[0], ds.labels[5]);
  EXPECT_EQ(b.y.data<std::int32_t>()[1], ds.labels[2]);
  EXPECT_THROW(prepare_batch(ds, std::vector<std::int64_t>{20}, 0, LoaderOptions{}), InputError);
}

TEST(Loader, PrefetchedBatchesEqualSequentialPreparation) {
  const Dataset ds = make_synthetic_dataset(103, 3, 8, 8, 10, 2);
  for (int world = 1; world <= 3; ++world) {
    for (int rank = 0; rank < world; ++rank) {
      const Sampler sampler(ds.size(), SamplerConfig::train(10, 4, rank, world));
      for (std::int64_t epoch : {0, 1}) {
        const auto expected_indices = sampler.epoch_batches(epoch);
        for (int prefetch : {0, 1, 2, 5}) {
          Loader loader(ds, sampler, epoch, full_options(prefetch));
          EXPECT_EQ(loader.num_batches(), static_cast<std::int64_t>(expected_indices.size()));
          std::size_t i = 0;
          while (auto batch = loader.next()) {
            ASSERT_LT(i, expected_indices.size());
            const Batch ref = prepare_batch(ds, expected_indices[i], epoch, full_options(0));
            EXPECT_TRUE(same_batch(*batch, ref)) << "prefetch " << prefetch << " batch " << i;
            ++i;
          }
          EXPECT_EQ(i, expected_indices.size());
          EXPECT_EQ(loader.batches_delivered(), loader.num_batches());
          EXPECT_FALSE(loader.next().has_value());  // stays at the end
        }
      }
    }
  }
}

// Augmentation depends on the sample, not on where it lands: the same sample in different batches
// (other batch size, other rank) is prepared identically.
TEST(Loader, SampleResultIndependentOfBatchPosition) {
  const Dataset ds = make_synthetic_dataset(30, 3, 8, 8, 10, 3);
  const LoaderOptions o = full_options(0);
  const Batch a = prepare_batch(ds, std::vector<std::int64_t>{7, 3, 12}, 5, o);
  const Batch b = prepare_batch(ds, std::vector<std::int64_t>{12}, 5, o);
  EXPECT_TRUE(std::equal(a.x.data<float>() + 2 * 192, a.x.data<float>() + 3 * 192, b.x.data<float>()));
}

TEST(Loader, WorkerExceptionReachesConsumerAfterEarlierBatches) {
  const Dataset ds = make_synthetic_dataset(50, 1, 4, 4, 10, 4);
  const Sampler sampler(ds.size(), SamplerConfig::train(5, 1));
  for (int prefetch : {0, 1, 3}) {
    LoaderOptions o;
    o.prefetch = prefetch;
    o.on_prepared = [count = 0](Batch&) mutable {
      if (++count == 4) throw DataError("disk on fire");
    };
    Loader loader(ds, sampler, 0, o);
    for (int i = 0; i < 3; ++i) ASSERT_TRUE(loader.next().has_value()) << prefetch;
    EXPECT_THROW(
        {
          try {
            (void)loader.next();
          } catch (const DataError& e) {
            EXPECT_STREQ(e.what(), "disk on fire");
            throw;
          }
        },
        DataError);
    EXPECT_THROW((void)loader.next(), DataError);  // and again on later calls
  }
  // A bad index in explicit batches surfaces the same way.
  Loader bad(ds, std::vector<std::vector<std::int64_t>>{{0, 1}, {2, 999}}, 0, LoaderOptions{});
  EXPECT_TRUE(bad.next().has_value());
  EXPECT_THROW((void)bad.next(), InputError);
}

TEST(Loader, DestroyMidEpochStopsPromptlyAndFreesBatches) {
  const Dataset ds = make_synthetic_dataset(400, 3, 16, 16, 10, 5);
  const Sampler sampler(ds.size(), SamplerConfig::train(4, 2));
  const std::size_t in_use_before = cpu_allocator_stats().bytes_in_use;
  std::atomic<int> prepared{0};
  for (int taken : {0, 1, 5}) {
    LoaderOptions o;
    o.prefetch = 2;
    o.on_prepared = [&](Batch&) {
      ++prepared;
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    };
    const Stopwatch watch;
    {
      Loader loader(ds, sampler, 0, o);
      for (int i = 0; i < taken; ++i) ASSERT_TRUE(loader.next().has_value());
      std::this_thread::sleep_for(std::chrono::milliseconds(20));  // let the queue fill up
    }
    EXPECT_LT(watch.seconds(), 2.0);
  }
  // The worker stopped long before preparing the 100 batches of each epoch.
  EXPECT_LT(prepared.load(), 60);
  EXPECT_EQ(cpu_allocator_stats().bytes_in_use, in_use_before);
}

TEST(Loader, WaitTimeCountsTimeInsideNext) {
  const Dataset ds = make_synthetic_dataset(40, 1, 4, 4, 10, 6);
  const Sampler sampler(ds.size(), SamplerConfig::train(10, 1));
  LoaderOptions o;
  o.prefetch = 0;
  o.on_prepared = [](Batch&) { std::this_thread::sleep_for(std::chrono::milliseconds(10)); };
  Loader sync(ds, sampler, 0, o);
  while (sync.next()) EXPECT_GE(sync.last_wait_seconds(), 0.009);
  EXPECT_GE(sync.wait_seconds(), 0.039);

  // A consumer slower than the worker barely waits once the first batch is ready.
  o.prefetch = 2;
  Loader async(ds, sampler, 0, o);
  double after_first = 0;
  int n = 0;
  while (async.next()) {
    if (n++ > 0) after_first += async.last_wait_seconds();
    std::this_thread::sleep_for(std::chrono::milliseconds(30));
  }
  EXPECT_EQ(n, 4);
  EXPECT_LT(after_first, 0.02);
  EXPECT_GE(async.wait_seconds(), after_first);
}

TEST(Loader, EdgeCases) {
  const Dataset ds = make_synthetic_dataset(7, 1, 3, 3, 10, 7);
  // Batch larger than the shard (evaluation): one short batch.
  Loader eval(ds, Sampler(ds.size(), SamplerConfig::eval(100, 1, 2)), 0, LoaderOptions{});
  auto b = eval.next();
  ASSERT_TRUE(b.has_value());
  EXPECT_EQ(b->x.shape(), (Shape{3, 1, 3, 3}));
  EXPECT_EQ(b->indices, (std::vector<std::int64_t>{4, 5, 6}));
  EXPECT_FALSE(eval.next().has_value());
  // Batch of one.
  Loader ones(ds, Sampler(ds.size(), SamplerConfig::train(1, 3)), 0, LoaderOptions{});
  int count = 0;
  while (auto one = ones.next()) {
    EXPECT_EQ(one->y.numel(), 1);
    ++count;
  }
  EXPECT_EQ(count, 7);
  // No batches at all (an empty dataset given explicit empty batches).
  const Dataset empty = make_synthetic_dataset(0, 1, 3, 3, 10);
  Loader none(empty, std::vector<std::vector<std::int64_t>>{}, 0, LoaderOptions{});
  EXPECT_FALSE(none.next().has_value());
  EXPECT_THROW(Sampler(empty.size(), SamplerConfig::train(1)), InputError);
  // An empty batch is a [0, C, H, W] tensor.
  Loader zero(ds, std::vector<std::vector<std::int64_t>>{{}}, 0, LoaderOptions{});
  auto z = zero.next();
  ASSERT_TRUE(z.has_value());
  EXPECT_EQ(z->x.shape(), (Shape{0, 1, 3, 3}));
  // Mismatched sampler, bad prefetch and normalisation are input errors.
  EXPECT_THROW(Loader(ds, Sampler(8, SamplerConfig::train(1)), 0), InputError);
  LoaderOptions neg;
  neg.prefetch = -1;
  EXPECT_THROW(Loader(ds, Sampler(7, SamplerConfig::train(1)), 0, neg), InputError);
  LoaderOptions norm;
  norm.normalization = {{0.5f, 0.5f}, {1.0f, 1.0f}};
  EXPECT_THROW(Loader(ds, Sampler(7, SamplerConfig::train(1)), 0, norm), InputError);
}

}  // namespace
}  // namespace dtrain
