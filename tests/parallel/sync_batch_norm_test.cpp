// Batch norm across ranks, on the local-threads backend: synchronized batch norm on 2 and 4 ranks
// equals one process holding the whole batch (one layer, then 3 training steps), and the
// statistics groups decide the result, not how the batch is spread: 1 rank x accumulation 8,
// 4 ranks x accumulation 2 and one process with ghost groups of the same 8 samples train alike.
#include <gtest/gtest.h>

#include <cmath>
#include <mutex>
#include <random>

#include "autograd/ops.h"
#include "comm/exact_sum.h"
#include "comm/local_transport.h"
#include "core/random.h"
#include "core/threads.h"
#include "nn/activation.h"
#include "nn/batch_norm.h"
#include "nn/conv2d.h"
#include "nn/linear.h"
#include "nn/sequential.h"
#include "parallel/data_parallel.h"
#include "tensor/allocator.h"

namespace dtrain {
namespace {

// Uniform values in [lo, hi), f32.
Tensor uniform_tensor(const Shape& shape, unsigned seed, double lo, double hi) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> uni(static_cast<float>(lo), static_cast<float>(hi));
  std::vector<float> v(static_cast<std::size_t>(shape.numel()));
  for (float& x : v) x = uni(gen);
  return Tensor::from_vector(v, shape);
}

struct BatchNormResult {
  std::vector<float> y, dx, dgamma, dbeta, running_mean, running_var;
};

// One training-mode batch norm of `x` (rows [lo, hi)) with upstream gradient `dy`.
BatchNormResult normalise_rows(const Tensor& x, const Tensor& dy, std::int64_t lo, std::int64_t hi,
                               const ops::SumOverRanks& sync) {
  const std::int64_t c = x.size(1);
  ops::BatchNormState st;
  st.running_mean = Tensor::zeros({c});
  st.running_var = Tensor::full({c}, 1.0);
  st.sync = sync;
  Variable xv(x.slice_rows(lo, hi).clone(), true);
  Variable gamma(Tensor::full({c}, 1.5), true), beta(Tensor::full({c}, 0.25), true);
  Variable y = ops::batch_norm(xv, gamma, beta, st, true);
  y.backward(dy.slice_rows(lo, hi).clone());
  return {y.data().to_vector(),    xv.grad().to_vector(),       gamma.grad().to_vector(),
          beta.grad().to_vector(), st.running_mean.to_vector(), st.running_var.to_vector()};
}

class SyncBatchNormRanks : public ::testing::TestWithParam<int> {};

TEST_P(SyncBatchNormRanks, OneLayerEqualsOneProcessWithTheWholeBatch) {
  const int world = GetParam();
  const std::int64_t n = 8, c = 3;
  const Tensor x = uniform_tensor({n, c, 2, 3}, 1, 1.0, 2.0);
  const Tensor dy = uniform_tensor({n, c, 2, 3}, 2, 0.0, 1.0);
  const BatchNormResult whole = normalise_rows(x, dy, 0, n, {});
  std::vector<float> dgamma(c, 0.0F), dbeta(c, 0.0F);
  std::mutex mu;
  comm::run_local(world, [&](comm::Communicator& comm) {
    const std::int64_t lo = n / world * comm.rank(), hi = lo + n / world;
    const BatchNormResult part =
        normalise_rows(x, dy, lo, hi, [&comm](std::vector<double>& v) { comm::sum_in_rank_order(comm, v); });
    const std::size_t row = whole.y.size() / static_cast<std::size_t>(n);
    std::lock_guard lock(mu);
    for (std::size_t i = 0; i < part.y.size(); ++i) {
      const std::size_t at = static_cast<std::size_t>(lo) * row + i;
      EXPECT_NEAR(part.y[i], whole.y[at], 1e-5) << "y, rank " << comm.rank();
      EXPECT_NEAR(part.dx[i], whole.dx[at], 1e-5) << "dx, rank " << comm.rank();
    }
    for (std::int64_t k = 0; k < c; ++k) {
      dgamma[k] += part.dgamma[k];
      dbeta[k] += part.dbeta[k];
      EXPECT_NEAR(part.running_mean[k], whole.running_mean[k], 1e-6);
      EXPECT_NEAR(part.running_var[k], whole.running_var[k], 1e-6);
    }
  });
  for (std::int64_t k = 0; k < c; ++k) {
    // sums of 48 products of order 1 in f32: 1e-4
    EXPECT_NEAR(dgamma[k], whole.dgamma[k], 1e-4) << "the ranks' dgamma sum to one process's";
    EXPECT_NEAR(dbeta[k], whole.dbeta[k], 1e-4);
  }
}

INSTANTIATE_TEST_SUITE_P(Ranks, SyncBatchNormRanks, ::testing::Values(2, 4));

struct BnRun {
  int world = 1;
  std::int64_t per_rank_batch = 64;
  int accumulate = 1;      // 0: one process with StandardUpdater
  std::int64_t group = 0;  // ghost batch norm
  bool sync = false;
};

constexpr int kBnSteps = 3;

// Two convolutions (16 channels: the blocked layout) and a linear layer, each convolution and the
// pooled features batch-normalised. Shallow on purpose: through ResNet-20's 21 batch norms the
// rounding of a changed summation order alone moves the first layer's weights by 1e-4 per step.
std::shared_ptr<Module> small_bn_net() {
  Rng rng(4);
  auto m = std::make_shared<Sequential>();
  m->add(std::make_shared<Conv2d>(1, 16, 3, 2, 1, false, rng));
  m->add(std::make_shared<BatchNorm>(16));
  m->add(std::make_shared<ReLU>());
  m->add(std::make_shared<Conv2d>(16, 16, 3, 2, 1, false, rng));
  m->add(std::make_shared<BatchNorm>(16));
  m->add(std::make_shared<ReLU>());
  m->add(global_avg_pool());
  m->add(std::make_shared<Flatten>());
  m->add(std::make_shared<BatchNorm>(16));
  m->add(std::make_shared<Linear>(16, 10, true, rng));
  return m;
}

// rank 0's parameters after kBnSteps on synthetic data.
std::vector<float> train_bn_net(const BnRun& run) {
  static const Dataset ds = make_synthetic_dataset(512, 1, 28, 28, 10, 5);
  std::vector<float> out;
  auto body = [&](int rank, comm::Communicator* comm) {
    set_num_threads(1);
    auto model = small_bn_net();
    OptimizerConfig oc;
    oc.lr = 0.1;
    auto opt = make_optimizer(oc, model->parameters());
    const Sampler sampler(ds.size(), SamplerConfig::train(run.per_rank_batch, 11, rank, run.world));
    std::unique_ptr<CommWorker> worker;
    std::unique_ptr<Updater> updater;
    for (BatchNorm* bn : batch_norms(*model)) bn->set_group(run.group);
    if (comm != nullptr) {
      worker = std::make_unique<CommWorker>(*comm);
      DataParallelConfig config;
      config.accumulate = run.accumulate;
      config.sync_batch_norm = run.sync;
      updater = std::make_unique<DataParallelUpdater>(*model, *opt, *worker, config);
    } else {
      updater = std::make_unique<StandardUpdater>(*model, *opt);
    }
    Loader loader(ds, sampler, 0, LoaderOptions{0, {}, {}, 0, {}});
    for (int step = 0; step < kBnSteps; ++step) (void)updater->update(*loader.next(), step);
    updater->flush();
    if (rank == 0) {
      for (auto& p : model->parameters()) {
        const auto v = p.data().to_vector();
        out.insert(out.end(), v.begin(), v.end());
      }
    }
    updater.reset();
    worker.reset();
  };
  if (run.accumulate == 0) {
    body(0, nullptr);
  } else {
    comm::run_local(run.world, [&](comm::Communicator& c) { body(c.rank(), &c); });
  }
  return out;
}

void expect_same_weights(const std::vector<float>& a, const std::vector<float>& b) {
  ASSERT_EQ(a.size(), b.size());
  double worst = 0;
  for (std::size_t i = 0; i < a.size(); ++i) worst = std::max(worst, static_cast<double>(std::abs(a[i] - b[i])));
  EXPECT_LT(worst, 1e-5);
}

TEST(SyncBatchNorm, TrainingOnTwoAndFourRanksEqualsOneProcess) {
  const std::vector<float> whole = train_bn_net({1, 32, 0, 0, false});
  expect_same_weights(train_bn_net({2, 16, 1, 0, true}), whole);
  expect_same_weights(train_bn_net({4, 8, 1, 0, true}), whole);
}

TEST(BatchNormGroups, AccumulationRanksAndGhostGroupsOfTheSameSamplesAgree) {
  // Every run normalises the same groups of 8 consecutive samples of each 64-sample global batch.
  const std::vector<float> one_rank = train_bn_net({1, 64, 8, 0, false});
  expect_same_weights(train_bn_net({4, 16, 2, 0, false}), one_rank);
  expect_same_weights(train_bn_net({1, 64, 0, 8, false}), one_rank);
}

}  // namespace
}  // namespace dtrain
