// Parameter-server training of a small MLP on synthetic data: BSP with W workers of batch B
// follows one process with batch W*B (every optimizer, weight decay on, a learning-rate schedule),
// and K = 1, 2, 3 servers give bit for bit the same weights.
#include "ps/ps_updater.h"

#include <gtest/gtest.h>

#include <cmath>
#include <optional>
#include <string>
#include <utility>

#include "core/error.h"
#include "core/random.h"
#include "data/dataset.h"
#include "data/loader.h"
#include "data/sampler.h"
#include "nn/activation.h"
#include "nn/linear.h"
#include "nn/sequential.h"
#include "ps/ps_test_util.h"

namespace dtrain::ps {
namespace {

constexpr int kSteps = 20;
constexpr std::int64_t kGlobalBatch = 192;

const Dataset& images() {
  static const Dataset ds = make_synthetic_dataset(4096, 1, 8, 8, 10, 5);  // 21 batches of 192
  return ds;
}

Batch next_batch(Loader& loader) {
  std::optional<Batch> b = loader.next();
  DT_CHECK(b.has_value(), "the epoch ended before step {}", kSteps);
  return std::move(*b);
}

std::shared_ptr<Module> small_mlp() {
  Rng rng(3);
  auto m = std::make_shared<Sequential>();
  m->add(std::make_shared<Flatten>());
  m->add(std::make_shared<Linear>(64, 32, true, rng));
  m->add(std::make_shared<ReLU>());
  m->add(std::make_shared<Linear>(32, 10, true, rng));
  return m;
}

OptimizerConfig with_decay(const std::string& name) {
  OptimizerConfig o;
  o.name = name;
  o.lr = name == "sgd" ? 0.1 : 0.01;
  o.momentum = 0.9;
  o.weight_decay = 5e-4;
  return o;
}

// A schedule as the trainer applies one, on the optimizer before each step (a linear warmup):
// the workers send it with their pushes.
double lr_at(const OptimizerConfig& o, int step) { return o.lr * (step + 1) / kSteps; }

std::vector<float> flat_parameters(const Module& m) {
  std::vector<float> out;
  for (const Variable& p : m.parameters()) {
    const auto v = p.data().to_vector();
    out.insert(out.end(), v.begin(), v.end());
  }
  return out;
}

std::vector<float> single_process(const OptimizerConfig& oc) {
  set_num_threads(1);
  auto model = small_mlp();
  auto opt = make_optimizer(oc, model->parameters());
  StandardUpdater updater(*model, *opt);
  Loader loader(images(), Sampler(images().size(), SamplerConfig::train(kGlobalBatch, 11)), 0,
                LoaderOptions{0, {}, {}, 0, {}});
  for (int step = 0; step < kSteps; ++step) {
    opt->set_lr(lr_at(oc, step));
    updater.update(next_batch(loader), step);
  }
  return flat_parameters(*model);
}

struct BspRun {
  std::vector<float> servers;  // the servers' weights end to end
  std::vector<float> worker0;  // worker 0's parameters after its last pull
};

BspRun bsp(int workers, int servers, const OptimizerConfig& oc, int accumulate = 1) {
  const PsConfig config = testing::test_config(workers, servers, SyncMode::kBsp);
  BspRun run;
  const std::int64_t total = small_mlp()->num_parameters();
  run.servers =
      testing::run_ps(config, oc, total, [&](comm::Transport& t) {
        auto model = small_mlp();
        // The worker's optimizer carries only the learning rate.
        auto opt = make_optimizer(oc, model->parameters());
        PsUpdater updater(*model, *opt, t, config);
        updater.set_accumulate(accumulate);
        const Sampler sampler(images().size(), SamplerConfig::train(kGlobalBatch / workers, 11, t.rank(), workers));
        Loader loader(images(), sampler, 0, LoaderOptions{0, {}, {}, 0, {}});
        for (int step = 0; step < kSteps; ++step) {
          opt->set_lr(lr_at(oc, step));
          const StepResult r = updater.update(next_batch(loader), step);
          EXPECT_EQ(r.samples, kGlobalBatch / workers);
        }
        updater.finish();
        if (t.rank() == 0) run.worker0 = flat_parameters(*model);
      }).weights;
  return run;
}

class PsEveryOptimizer : public ::testing::TestWithParam<std::string> {};

// Momentum and weight decay (and RMSprop's and Adam's state) live on the servers; the run equals
// allreduce training's arithmetic, the mean gradient of each step, to 1e-5 relative.
TEST_P(PsEveryOptimizer, BspEqualsOneProcessWithTheGlobalBatchForEveryServerCount) {
  const OptimizerConfig oc = with_decay(GetParam());
  const std::vector<float> reference = single_process(oc);
  const BspRun one = bsp(3, 1, oc);
  ASSERT_EQ(one.servers.size(), reference.size());
  EXPECT_EQ(one.worker0, one.servers) << "the last pull brought every update";
  double worst = 0;
  for (std::size_t i = 0; i < reference.size(); ++i) {
    const double diff = std::abs(static_cast<double>(one.servers[i]) - reference[i]);
    worst = std::max(worst, diff / std::max(1.0, std::abs(static_cast<double>(reference[i]))));
  }
  EXPECT_LT(worst, 1e-5);
  EXPECT_NE(one.servers, flat_parameters(*small_mlp())) << "training moved the weights";
  for (int servers : {2, 3}) {
    const BspRun k = bsp(3, servers, oc);
    EXPECT_EQ(k.servers, one.servers) << servers << " servers: the sharding changed the arithmetic";
    EXPECT_EQ(k.worker0, one.servers) << servers << " servers";
  }
}

INSTANTIATE_TEST_SUITE_P(Optimizers, PsEveryOptimizer, ::testing::Values("sgd", "rmsprop", "adam"),
                         [](const auto& p) { return p.param; });

// --accumulate 2: each worker pushes the mean gradient of its two micro-batches, the same step
// as the whole batch's to rounding.
TEST(PsUpdater, AccumulatedMicroBatchesPushTheBatchsMeanGradient) {
  const OptimizerConfig oc = with_decay("sgd");
  const std::vector<float> reference = single_process(oc);
  const BspRun two = bsp(3, 2, oc, 2);
  ASSERT_EQ(two.servers.size(), reference.size());
  double worst = 0;
  for (std::size_t i = 0; i < reference.size(); ++i) {
    const double diff = std::abs(static_cast<double>(two.servers[i]) - reference[i]);
    worst = std::max(worst, diff / std::max(1.0, std::abs(static_cast<double>(reference[i]))));
  }
  EXPECT_LT(worst, 1e-5);
  auto model = small_mlp();
  auto opt = make_optimizer(oc, model->parameters());
  const PsConfig config = testing::test_config(1, 1, SyncMode::kBsp);
  EXPECT_THROW(testing::run_ps(config, oc, model->num_parameters(),
                               [&](comm::Transport& t) {
                                 PsUpdater updater(*model, *opt, t, config);
                                 updater.set_accumulate(5);  // 5 does not divide 192
                                 Loader loader(images(),
                                               Sampler(images().size(), SamplerConfig::train(kGlobalBatch, 11)), 0,
                                               LoaderOptions{0, {}, {}, 0, {}});
                                 updater.update(next_batch(loader), 0);
                               }),
               InputError);
}

// Backward finishes the last layer first: with 8 shards of small_mlp's 2410 parameters, the last
// (2108..2409: fc2's weight and bias) is on its way to its server before fc1's weight gradient
// is final. With --accumulate every shard waits for the last micro-batch's backward.
TEST(PsUpdater, ShardsArePushedDuringBackwardAsTheirGradientsBecomeFinal) {
  const OptimizerConfig oc = with_decay("sgd");
  for (int accumulate : {1, 2}) {
    const PsConfig config = testing::test_config(1, 8, SyncMode::kBsp);
    std::vector<bool> seen;  // at each of fc1's weight gradients: whether the last shard was pushed
    testing::run_ps(config, oc, small_mlp()->num_parameters(), [&](comm::Transport& t) {
      auto model = small_mlp();
      auto opt = make_optimizer(oc, model->parameters());
      PsUpdater updater(*model, *opt, t, config);
      updater.set_accumulate(accumulate);
      Variable fc1_weight = model->parameters()[0];
      fc1_weight.add_grad_ready_hook([&](Variable&) { seen.push_back(updater.worker().pushed(7)); });
      Loader loader(images(), Sampler(images().size(), SamplerConfig::train(kGlobalBatch, 11)), 0,
                    LoaderOptions{0, {}, {}, 0, {}});
      for (int step = 0; step < 2; ++step) updater.update(next_batch(loader), step);
      updater.finish();
    });
    const std::vector<bool> expected(static_cast<std::size_t>(2 * accumulate), accumulate == 1);
    EXPECT_EQ(seen, expected) << "accumulate " << accumulate;
  }
}

TEST(PsUpdater, BspRunsAreBitwiseRepeatable) {
  EXPECT_EQ(bsp(2, 2, with_decay("sgd")).servers, bsp(2, 2, with_decay("sgd")).servers);
}

}  // namespace
}  // namespace dtrain::ps
