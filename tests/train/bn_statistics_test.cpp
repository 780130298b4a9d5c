// Batch-norm statistics without moving averages (train/bn_statistics.h): the population pass
// gives the exact mean and biased variance of a layer's inputs over the data and the same
// statistics on 1 and 4 ranks; the last batch's statistics are averaged over ranks.
#include "train/bn_statistics.h"

#include <gtest/gtest.h>

#include <mutex>

#include "comm/exact_sum.h"
#include "comm/local_transport.h"
#include "core/random.h"
#include "core/threads.h"
#include "nn/activation.h"
#include "nn/batch_norm.h"
#include "nn/conv2d.h"
#include "nn/sequential.h"

namespace dtrain {
namespace {

const Dataset& bn_data() {
  static const Dataset ds = make_synthetic_dataset(200, 1, 8, 8, 10, 3);
  return ds;
}

// conv -> bn -> relu -> conv -> bn: the second layer's inputs depend on the first's statistics.
std::shared_ptr<Sequential> two_norm_model(std::shared_ptr<Conv2d>* first_conv = nullptr) {
  Rng rng(9);
  auto m = std::make_shared<Sequential>();
  auto conv = std::make_shared<Conv2d>(1, 4, 3, 1, 1, true, rng);
  if (first_conv != nullptr) *first_conv = conv;
  m->add(conv);
  m->add(std::make_shared<BatchNorm>(4));
  m->add(std::make_shared<ReLU>());
  m->add(std::make_shared<Conv2d>(4, 4, 3, 1, 1, true, rng));
  m->add(std::make_shared<BatchNorm>(4));
  return m;
}

std::vector<std::vector<float>> statistics(Module& model) {
  std::vector<std::vector<float>> out;
  for (BatchNorm* bn : batch_norms(model)) {
    out.push_back(bn->running_mean().to_vector());
    out.push_back(bn->running_var().to_vector());
  }
  return out;
}

TEST(BnStatistics, ParsesTheModes) {
  EXPECT_EQ(parse_bn_statistics("running").mode, BnStatistics::kRunning);
  EXPECT_EQ(parse_bn_statistics("last-batch").mode, BnStatistics::kLastBatch);
  EXPECT_EQ(parse_bn_statistics("population").population_batches, 0);
  EXPECT_EQ(parse_bn_statistics("population:12").population_batches, 12);
  EXPECT_EQ(bn_statistics_name(parse_bn_statistics("population:12")), "population:12");
  for (const char* bad : {"moving", "population:", "population:0", "population:x", "population12"}) {
    EXPECT_THROW(parse_bn_statistics(bad), InputError) << bad;
  }
}

TEST(BnStatistics, PopulationIsTheExactMeanAndBiasedVarianceOverTheData) {
  set_num_threads(1);
  std::shared_ptr<Conv2d> first_conv;
  auto model = two_norm_model(&first_conv);
  PopulationPass pass;
  pass.chunk = 16;  // 13 chunks, the last of 8 samples
  pass.loader.prefetch = 0;
  EXPECT_EQ(recompute_population_statistics(*model, bn_data(), pass, {}), 200);
  // The first batch norm's input is the first convolution's output over all 200 samples at once.
  NoGradGuard no_grad;
  std::vector<std::int64_t> every(200);
  for (std::int64_t i = 0; i < 200; ++i) every[static_cast<std::size_t>(i)] = i;
  const Batch whole = prepare_batch(bn_data(), every, 0, {});
  const std::vector<float> h = (*first_conv)(Variable(whole.x)).data().to_layout(Layout::kPlain).to_vector();
  const std::size_t per_channel = 8 * 8;
  const auto stats = statistics(*model);
  for (std::size_t c = 0; c < 4; ++c) {
    double s = 0, ss = 0;
    for (std::size_t n = 0; n < 200; ++n) {
      for (std::size_t k = 0; k < per_channel; ++k) s += h[(n * 4 + c) * per_channel + k];
    }
    const double mean = s / (200.0 * per_channel);
    for (std::size_t n = 0; n < 200; ++n) {
      for (std::size_t k = 0; k < per_channel; ++k) {
        const double d = h[(n * 4 + c) * per_channel + k] - mean;
        ss += d * d;
      }
    }
    const double var = ss / (200.0 * per_channel);
    EXPECT_NEAR(stats[0][c], mean, 1e-5 * (1 + std::abs(mean)));
    EXPECT_NEAR(stats[1][c], var, 1e-5 * var);
  }
}

TEST(BnStatistics, PopulationIsTheSameOnOneAndFourRanks) {
  set_num_threads(1);
  PopulationPass pass;
  pass.chunk = 16;
  pass.loader.prefetch = 0;
  auto single = two_norm_model();
  recompute_population_statistics(*single, bn_data(), pass, {});
  const auto want = statistics(*single);
  std::mutex mu;
  comm::run_local(4, [&](comm::Communicator& c) {
    auto model = two_norm_model();
    PopulationPass mine = pass;
    mine.rank = c.rank();
    mine.world = 4;
    const std::int64_t seen = recompute_population_statistics(
        *model, bn_data(), mine, [&c](std::vector<double>& v) { comm::sum_in_rank_order(c, v); });
    const auto got = statistics(*model);
    std::lock_guard lock(mu);
    EXPECT_EQ(seen, 200);
    for (std::size_t t = 0; t < want.size(); ++t) {
      for (std::size_t k = 0; k < want[t].size(); ++k) {
        EXPECT_NEAR(got[t][k], want[t][k], 1e-5 * (1 + std::abs(want[t][k]))) << "tensor " << t << " rank " << c.rank();
      }
    }
  });
}

TEST(BnStatistics, LastBatchStatisticsAreAveragedOverRanks) {
  std::mutex mu;
  comm::run_local(2, [&](comm::Communicator& c) {
    auto model = std::make_shared<Sequential>();
    auto layer = std::make_shared<BatchNorm>(2);
    model->add(layer);
    layer->running_mean().fill(c.rank() == 0 ? 1.0 : 3.0);
    layer->running_var().fill(c.rank() == 0 ? 0.5 : 1.5);
    average_statistics_over_ranks(
        *model, [&c](std::vector<double>& v) { comm::sum_in_rank_order(c, v); }, 2);
    std::lock_guard lock(mu);
    EXPECT_EQ(layer->running_mean().to_vector(), std::vector<float>({2.0F, 2.0F}));
    EXPECT_EQ(layer->running_var().to_vector(), std::vector<float>({1.0F, 1.0F}));
  });
  // keep_last_batch_statistics: after one training batch the running statistics are its own.
  auto model = std::make_shared<Sequential>();
  auto layer = std::make_shared<BatchNorm>(1);
  model->add(layer);
  keep_last_batch_statistics(*model);
  (void)(*model)(Variable(Tensor::from_vector(std::vector<float>{1, 2, 3, 6}, Shape{4, 1})));
  EXPECT_FLOAT_EQ(layer->running_mean().to_vector()[0], 3.0F);
  EXPECT_FLOAT_EQ(layer->running_var().to_vector()[0], 14.0F / 3);  // unbiased, as PyTorch keeps it
}

}  // namespace
}  // namespace dtrain
