// Ranks of one host that share one copy of the weights and the optimizer state (shm without
// double buffering, parallel/shared_weights.h): one copy, each rank updating its blocks, the
// same weights bit for bit as ranks that each keep and update their own.
#include "parallel/shared_weights.h"

#include <gtest/gtest.h>

#include <mutex>

#include "comm/local_transport.h"
#include "core/random.h"
#include "core/threads.h"
#include "data/dataset.h"
#include "data/loader.h"
#include "data/sampler.h"
#include "nn/models/models.h"
#include "parallel/data_parallel.h"

namespace dtrain {
namespace {

TEST(SharedWeights, EveryRanksBlocksCoverEveryElementOnce) {
  const std::vector<std::int64_t> numels{7, 1, 300, 5, 64};
  for (std::size_t bucket_bytes : {std::size_t{0}, std::size_t{256}, std::size_t{1} << 20}) {
    const BucketLayout layout = plan_buckets(numels, bucket_bytes);
    for (int ranks : {1, 2, 3, 5}) {
      std::vector<std::vector<int>> covered(numels.size());
      for (std::size_t i = 0; i < numels.size(); ++i) covered[i].assign(static_cast<std::size_t>(numels[i]), 0);
      for (int r = 0; r < ranks; ++r) {
        const auto part = bucket_block_ranges(layout, numels, r, ranks);
        for (std::size_t i = 0; i < numels.size(); ++i) {
          for (std::int64_t e = part[i].begin; e < part[i].end; ++e) ++covered[i][static_cast<std::size_t>(e)];
        }
      }
      for (std::size_t i = 0; i < numels.size(); ++i) {
        for (int c : covered[i]) ASSERT_EQ(c, 1) << "parameter " << i << ", " << ranks << " ranks, " << bucket_bytes;
      }
    }
  }
}

struct RankRun {
  std::vector<std::vector<float>> parameters;  // per rank, flattened, after the steps
  std::vector<std::vector<float>> momenta;
  std::vector<const void*> addresses;        // per rank, where its first parameter lies while training
  std::vector<const void*> addresses_after;  // the same once the updater is gone
  std::vector<char> shared;
};

RankRun train_lenet(int world, bool shared_weights, bool double_buffering = false, const char* optimizer = "sgd",
                    double lr = 0.05) {
  static const Dataset ds = make_synthetic_dataset(1024, 1, 28, 28, 10, 7);
  RankRun out;
  const auto w = static_cast<std::size_t>(world);
  out.parameters.resize(w);
  out.momenta.resize(w);
  out.addresses.resize(w);
  out.addresses_after.resize(w);
  out.shared.resize(w);
  std::mutex mu;
  comm::run_local(world, [&](comm::Communicator& c) {
    set_num_threads(1);
    Rng rng(3);
    auto model = make_model("lenet", {1, 28, 28, 10}, rng);
    OptimizerConfig oc;
    oc.name = optimizer;
    oc.lr = lr;
    auto opt = make_optimizer(oc, model->parameters());
    CommWorker worker(c);
    DataParallelConfig config;
    config.algorithm = comm::Algorithm::kShm;
    config.bucket_bytes = 64 << 10;  // several buckets, of several parameters
    config.shared_weights = shared_weights;
    config.double_buffering = double_buffering;
    const Sampler sampler(ds.size(), SamplerConfig::train(16, 11, c.rank(), world));
    Loader loader(ds, sampler, 0, LoaderOptions{0, {}, {}, 0, {}});
    const auto r = static_cast<std::size_t>(c.rank());
    {
      DataParallelUpdater up(*model, *opt, worker, config);
      out.shared[r] = up.shares_weights() ? 1 : 0;
      out.addresses[r] = model->parameters()[0].data().raw_data();
      for (int step = 0; step < 4; ++step) up.update(*loader.next(), step);
      up.flush();
    }
    std::lock_guard lock(mu);
    out.addresses_after[r] = model->parameters()[0].data().raw_data();
    for (auto& p : model->parameters()) {
      const auto v = p.data().to_vector();
      out.parameters[r].insert(out.parameters[r].end(), v.begin(), v.end());
    }
    for (const auto& [name, t] : opt->state()) {
      const auto v = t.to_vector();
      out.momenta[r].insert(out.momenta[r].end(), v.begin(), v.end());
    }
  });
  return out;
}

TEST(SharedWeights, RanksShareOneCopyAndEndWithTheWeightsOfPrivateCopies) {
  for (int world : {2, 3}) {
    const RankRun shared = train_lenet(world, true);
    const RankRun own = train_lenet(world, false);
    for (int r = 0; r < world; ++r) {
      const auto i = static_cast<std::size_t>(r);
      EXPECT_TRUE(shared.shared[i]) << world;
      EXPECT_FALSE(own.shared[i]) << world;
      // One copy while training: every rank's parameters at one address (threads share it).
      EXPECT_EQ(shared.addresses[i], shared.addresses[0]) << world;
      if (r > 0) {
        EXPECT_NE(own.addresses[i], own.addresses[0]) << world;
        // Private copies again once the updater is gone: the model outlives the shared memory.
        EXPECT_NE(shared.addresses_after[i], shared.addresses_after[0]) << world;
      }
      // Bit for bit: the same arithmetic per element, split over the ranks.
      EXPECT_EQ(shared.parameters[i], own.parameters[i]) << world << " ranks, rank " << r;
      EXPECT_EQ(shared.momenta[i], own.momenta[i]) << world << " ranks, rank " << r;
    }
  }
}

// LARS and LAMB split their step too: each rank's parts' norms summed over the ranks, then each
// rank's update of its parts; equal to private copies up to the order of the norms' sums.
TEST(SharedWeights, LayerwiseOptimizersSplitTheirStepWithReducedNorms) {
  for (auto [optimizer, lr] : {std::pair{"lars", 1.0}, std::pair{"lamb", 0.005}}) {
    const RankRun shared = train_lenet(2, true, false, optimizer, lr);
    const RankRun own = train_lenet(2, false, false, optimizer, lr);
    ASSERT_TRUE(shared.shared[0]) << optimizer;
    double worst = 0, moved = 0;
    Rng rng(3);  // train_lenet's initial weights
    std::vector<float> initial;
    for (auto& p : make_model("lenet", {1, 28, 28, 10}, rng)->parameters()) {
      const auto v = p.data().to_vector();
      initial.insert(initial.end(), v.begin(), v.end());
    }
    for (std::size_t i = 0; i < own.parameters[0].size(); ++i) {
      worst = std::max(worst, static_cast<double>(std::abs(shared.parameters[1][i] - own.parameters[1][i])));
      moved = std::max(moved, static_cast<double>(std::abs(own.parameters[1][i] - initial[i])));
    }
    EXPECT_LT(worst, 1e-6) << optimizer;
    EXPECT_GT(moved, 1e-3) << optimizer << ": the steps moved the weights";
  }
}

TEST(SharedWeights, NotWithDoubleBuffering) {
  // Step t-1's update would run while another rank still reads the weights in step t.
  const RankRun run = train_lenet(2, true, true);
  EXPECT_FALSE(run.shared[0]);
  EXPECT_FALSE(run.shared[1]);
}

}  // namespace
}  // namespace dtrain
