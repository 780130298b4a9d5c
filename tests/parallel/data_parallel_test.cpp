// Data-parallel training on the local-threads backend (each rank a thread): p ranks with batch B
// each follow the loss curve of one process with batch p*B, for every algorithm; accumulation,
// double buffering, f16/bf16 communication and the NaN check behave as documented.
#include "parallel/data_parallel.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <cstdint>
#include <mutex>

#include "autograd/ops.h"
#include "comm/local_transport.h"
#include "core/random.h"
#include "core/threads.h"
#include "nn/activation.h"
#include "nn/linear.h"
#include "nn/models/models.h"
#include "nn/sequential.h"
#include "tensor/allocator.h"
#include "tensor/kernels/cpu/compute_precision.h"

namespace dtrain {
namespace {

constexpr int kSteps = 12;

Dataset data() {
  static const Dataset ds = make_synthetic_dataset(4096, 1, 28, 28, 10, 7);
  return ds;
}

struct TrainRun {
  std::vector<double> losses;      // per step, averaged over ranks
  std::vector<float> parameters;   // rank 0's, flattened, after the last step
};

// Trains `model` for kSteps with global batch `global_batch` split over `world` ranks.
TrainRun train(const std::string& model_name, int world, std::int64_t global_batch, const DataParallelConfig& config) {
  const Dataset ds = data();
  TrainRun out;
  out.losses.assign(kSteps, 0.0);
  std::mutex mu;
  auto body = [&](int rank, comm::Communicator* comm) {
    set_num_threads(1);
    Rng rng(3);
    auto model = make_model(model_name, {1, 28, 28, 10}, rng);
    OptimizerConfig oc;
    oc.lr = 0.05;
    auto opt = make_optimizer(oc, model->parameters());
    const Sampler sampler(ds.size(), SamplerConfig::train(global_batch / world, 11, rank, world));
    std::unique_ptr<CommWorker> worker;
    std::unique_ptr<Updater> updater;
    if (comm != nullptr) {
      worker = std::make_unique<CommWorker>(*comm);
      updater = std::make_unique<DataParallelUpdater>(*model, *opt, *worker, config);
    } else {
      updater = std::make_unique<StandardUpdater>(*model, *opt);
    }
    Loader loader(ds, sampler, 0, LoaderOptions{0, {}, {}, 0, {}});
    for (int step = 0; step < kSteps; ++step) {
      auto batch = loader.next();
      const StepResult r = updater->update(*batch, step);
      std::lock_guard lock(mu);
      out.losses[static_cast<std::size_t>(step)] += r.loss / world;
    }
    updater->flush();
    if (rank == 0) {
      for (auto& p : model->parameters()) {
        auto v = p.data().to_vector();
        out.parameters.insert(out.parameters.end(), v.begin(), v.end());
      }
    }
    updater.reset();
    worker.reset();
  };
  if (world == 1 && config.accumulate == 0) {
    body(0, nullptr);
  } else {
    comm::run_local(world, [&](comm::Communicator& c) { body(c.rank(), &c); });
  }
  return out;
}

TrainRun single_process(const std::string& model, std::int64_t batch) {
  DataParallelConfig none;
  none.accumulate = 0;  // marker: StandardUpdater
  return train(model, 1, batch, none);
}

double max_relative_difference(const std::vector<double>& a, const std::vector<double>& b) {
  double worst = 0;
  for (std::size_t i = 0; i < a.size(); ++i) worst = std::max(worst, std::abs(a[i] - b[i]) / std::abs(b[i]));
  return worst;
}

class EveryAlgorithm : public ::testing::TestWithParam<comm::Algorithm> {};

TEST_P(EveryAlgorithm, TwoRanksFollowTheSingleProcessLossCurve) {
  const TrainRun reference = single_process("mlp", 64);
  DataParallelConfig c;
  c.algorithm = GetParam();
  c.bucket_bytes = 256 << 10;  // several buckets
  const TrainRun dp = train("mlp", 2, 64, c);
  EXPECT_LT(max_relative_difference(dp.losses, reference.losses), 1e-4);
  ASSERT_EQ(dp.parameters.size(), reference.parameters.size());
  for (std::size_t i = 0; i < dp.parameters.size(); i += 97) EXPECT_NEAR(dp.parameters[i], reference.parameters[i], 1e-5);
}

INSTANTIATE_TEST_SUITE_P(Algorithms, EveryAlgorithm,
                         ::testing::Values(comm::Algorithm::kRing, comm::Algorithm::kTree, comm::Algorithm::kButterfly,
                                           comm::Algorithm::kOneToAll, comm::Algorithm::kShm, comm::Algorithm::kAuto),
                         [](const auto& p) { return std::string(comm::algorithm_name(p.param)); });

TEST(DataParallel, ThreeRanksLeNet) {
  const TrainRun reference = single_process("lenet", 48);
  DataParallelConfig c;
  const TrainRun dp = train("lenet", 3, 48, c);
  EXPECT_LT(max_relative_difference(dp.losses, reference.losses), 1e-4);
}

TEST(DataParallel, AccumulationMatchesOneBigBatch) {
  const TrainRun reference = single_process("mlp", 64);
  DataParallelConfig c;
  c.accumulate = 4;
  const TrainRun dp = train("mlp", 2, 64, c);
  EXPECT_LT(max_relative_difference(dp.losses, reference.losses), 1e-4);
}

TEST(DataParallel, HalfPrecisionCommunicationStaysClose) {
  const TrainRun reference = single_process("mlp", 64);
  for (comm::Algorithm a : {comm::Algorithm::kAuto, comm::Algorithm::kShm}) {
    for (DType t : {DType::kF16, DType::kBF16}) {
      DataParallelConfig c;
      c.comm_dtype = t;
      c.algorithm = a;
      const TrainRun dp = train("mlp", 2, 64, c);
      const std::string what = fmt::format("{} {}", comm::algorithm_name(a), dtype_name(t));
      EXPECT_LT(max_relative_difference(dp.losses, reference.losses), t == DType::kF16 ? 1e-2 : 3e-2) << what;
      EXPECT_GT(max_relative_difference(dp.losses, reference.losses), 0.0) << what << ": the wire type had no effect";
    }
  }
}

// One process applying, after step t's backward, the gradient of step t-1: what double
// buffering computes.
std::vector<double> single_process_one_step_stale(std::int64_t batch) {
  const Dataset ds = data();
  Rng rng(3);
  auto model = make_model("mlp", {1, 28, 28, 10}, rng);
  OptimizerConfig oc;
  oc.lr = 0.05;
  auto opt = make_optimizer(oc, model->parameters());
  const Sampler sampler(ds.size(), SamplerConfig::train(batch, 11));
  Loader loader(ds, sampler, 0, LoaderOptions{0, {}, {}, 0, {}});
  std::vector<double> losses;
  std::vector<Tensor> previous;
  for (int step = 0; step < kSteps; ++step) {
    auto b = loader.next();
    opt->zero_grad();
    Variable loss = ops::softmax_cross_entropy((*model)(Variable(b->x)), b->y);
    losses.push_back(loss.data().item());
    loss.backward();
    std::vector<Tensor> current;
    for (auto& p : model->parameters()) current.push_back(p.grad().clone());
    if (!previous.empty()) {
      auto params = model->parameters();
      for (std::size_t i = 0; i < params.size(); ++i) params[i].set_grad(previous[i]);
      opt->step();
    }
    previous = std::move(current);
  }
  return losses;
}

TEST(DataParallel, DoubleBufferingUpdatesWithOneStepStaleGradients) {
  const std::vector<double> stale = single_process_one_step_stale(64);
  DataParallelConfig c;
  c.double_buffering = true;
  c.algorithm = comm::Algorithm::kShm;  // two sets of buckets in shared memory
  EXPECT_LT(max_relative_difference(train("mlp", 2, 64, c).losses, stale), 1e-4) << "shm";
  c.algorithm = comm::Algorithm::kAuto;
  const TrainRun dp = train("mlp", 2, 64, c);
  EXPECT_LT(max_relative_difference(dp.losses, stale), 1e-4);
  const TrainRun fresh = single_process("mlp", 64);
  EXPECT_GT(max_relative_difference(dp.losses, fresh.losses), 1e-4) << "double buffering changed nothing";
}

TEST(Buckets, ReverseOrderAndThreshold) {
  // Parameters of 100, 200, 50, 400 elements with 1 KiB buckets (256 f32), walked from the last.
  const BucketLayout l = plan_buckets({100, 200, 50, 400}, 1024);
  ASSERT_EQ(l.buckets.size(), 3u);
  EXPECT_EQ(l.buckets[0], (std::vector<std::size_t>{3}));
  EXPECT_EQ(l.buckets[1], (std::vector<std::size_t>{2, 1}));
  EXPECT_EQ(l.buckets[2], (std::vector<std::size_t>{0}));
  EXPECT_EQ(l.offset[1], 50);
  EXPECT_EQ(plan_buckets({10, 10, 10}, 0).buckets.size(), 3u);
}

TEST(Buckets, ReleasedInOrderOnlyWhenComplete) {
  std::vector<Variable> ps{Variable(Tensor::zeros({4}), true), Variable(Tensor::zeros({4}), true),
                           Variable(Tensor::zeros({4}), true)};
  GradientBuckets b(ps, {"a", "b", "c"}, 0, DType::kF32, 1);  // one bucket each: c, b, a
  b.begin(0);
  EXPECT_TRUE(b.add(1, Tensor::full({4}, 1.0), 0).empty()) << "bucket of b waits for the one of c";
  EXPECT_EQ(b.add(2, Tensor::full({4}, 2.0), 0), (std::vector<std::size_t>{0, 1}));
  EXPECT_EQ(b.complete(0), (std::vector<std::size_t>{2}));
  EXPECT_EQ(b.gradient(0, 0).to_vector(), std::vector<float>(4, 0.0f));
  EXPECT_EQ(b.gradient(2, 0).to_vector(), std::vector<float>(4, 2.0f));
}

TEST(Buckets, BuffersOfEverySetLieInOneRegionOfHugePages) {
  // Peers copy out of and into these buffers (tensor/allocator.h: huge_page_rounded): one region
  // of whole 2 MiB pages, starting on one, each buffer on cache lines of its own.
  std::vector<Variable> ps;
  ps.reserve(6);
  for (int i = 0; i < 6; ++i) ps.emplace_back(Tensor::zeros({4}), true);
  GradientBuckets b(ps, {"a", "b", "c", "d", "e", "f"}, 32, DType::kF32, 2);  // buckets: (f, e), (d, c), (b, a)
  std::vector<std::uintptr_t> at;
  for (int set = 0; set < 2; ++set) {
    b.begin(set);
    for (std::size_t first : {5u, 3u, 1u})
      at.push_back(reinterpret_cast<std::uintptr_t>(b.gradient(first, set).raw_data()));
  }
  EXPECT_EQ(at[0] % kHugePageBytes, 0u) << "the first bucket starts the region";
  for (std::size_t i = 1; i < at.size(); ++i) {
    EXPECT_EQ(at[i] - at[i - 1], 64u) << "buckets follow one another, a cache line each";
  }
  for (std::size_t p = 0; p < 6; ++p) EXPECT_EQ(b.gradient(p, 1).to_vector(), std::vector<float>(4, 0.0f));
}

TEST(Buckets, OneParameterBucketAdoptsAnUnsharedGradientAndScalesItAfterTheSum) {
  std::vector<std::vector<float>> reduced(2), held(2);
  comm::run_local(2, [&](comm::Communicator& c) {
    std::vector<Variable> ps{Variable(Tensor::zeros({2}), true), Variable(Tensor::zeros({4}), true)};
    GradientBuckets b(ps, {"small", "large"}, 8, DType::kF32, 1, 0.5);  // buckets: large, small
    b.begin(0);
    const auto r = static_cast<float>(c.rank());
    Tensor large = Tensor::from_vector(std::vector<float>(4, r + 1), {4});
    b.add(1, large, 0);
    EXPECT_TRUE(b.adopted(0, 0));
    EXPECT_TRUE(b.gradient(1, 0).shares_storage_with(large)) << "no copy";
    Tensor small = Tensor::from_vector(std::vector<float>(2, 2 * r + 2), {2});
    // A second holder of the storage, e.g. the same tensor handed to another edge.
    const Tensor other_holder = small;  // NOLINT(performance-unnecessary-copy-initialization)
    b.add(0, small, 0);
    EXPECT_FALSE(b.adopted(1, 0)) << "a gradient something else holds is copied";
    for (std::size_t k : {0u, 1u}) b.reduce(c, k, 0, comm::Algorithm::kRing);
    const auto i = static_cast<std::size_t>(c.rank());
    reduced[i] = b.gradient(1, 0).to_vector();
    const std::vector<float> s = b.gradient(0, 0).to_vector();
    reduced[i].insert(reduced[i].end(), s.begin(), s.end());
    held[i] = other_holder.to_vector();
  });
  for (std::size_t i = 0; i < 2; ++i) {
    // Means over the ranks: (1 + 2) / 2 and (2 + 4) / 2.
    EXPECT_EQ(reduced[i], (std::vector<float>{1.5f, 1.5f, 1.5f, 1.5f, 3.0f, 3.0f}));
    EXPECT_EQ(held[i], std::vector<float>(2, static_cast<float>(2 * i + 2))) << "the shared gradient is untouched";
  }
}

// With f16 or bf16 on the wire each gradient goes into its wire slot times the scale and rounded,
// in one pass: its f32 slot stays untouched until the widened sums come back, no bucket adopts a
// gradient, and the mean is the 16-bit sum of the rounded halves, widened; a NaN is named.
TEST(Buckets, A16BitWireTakesEachGradientScaledAndRoundedAndGivesBackTheWidenedSums) {
  for (const DType wire : {DType::kF16, DType::kBF16}) {
    const auto round16 = [wire](float x) {
      return wire == DType::kF16 ? f16_to_f32(f32_to_f16(x)) : bf16_to_f32(f32_to_bf16(x));
    };
    const auto value = [](int rank, std::size_t i) { return 0.1f * static_cast<float>(i + 1) + 0.37f * rank; };
    std::vector<std::vector<float>> got(2);
    std::vector<std::string> bad(2);
    comm::run_local(2, [&](comm::Communicator& c) {
      std::vector<Variable> ps{Variable(Tensor::zeros({3}), true), Variable(Tensor::zeros({5}), true),
                               Variable(Tensor::zeros({40}), true)};
      GradientBuckets b(ps, {"small", "mid", "large"}, 64, wire, 1, 0.5);  // buckets: large; mid and small
      ASSERT_EQ(b.num_buckets(), 2u);
      for (const bool poison : {false, true}) {
        b.begin(0);
        std::vector<float> g(40);
        for (std::size_t i = 0; i < g.size(); ++i) g[i] = value(c.rank(), i);
        const Tensor large = Tensor::from_vector(g, {40});
        const std::vector<float> slot_before = b.gradient(2, 0).to_vector();  // zeros, then last step's sums
        b.add(2, large, 0);
        EXPECT_FALSE(b.adopted(0, 0)) << "a 16-bit wire adopts nothing";
        EXPECT_EQ(large.to_vector(), g) << "the gradient itself is not scaled";
        EXPECT_EQ(b.gradient(2, 0).to_vector(), slot_before) << "no f32 copy";
        std::vector<float> m(g.begin(), g.begin() + 5);
        if (poison && c.rank() == 1) m[2] = std::nanf("");
        b.add(1, Tensor::from_vector(m, {5}), 0);
        b.complete(0);  // small: no gradient, zeros
        for (std::size_t k : {0u, 1u}) b.reduce(c, k, 0, comm::Algorithm::kRing);
        bad[static_cast<std::size_t>(c.rank())] = b.non_finite_parameter(0);
        if (poison) continue;
        std::vector<float> all = b.gradient(2, 0).to_vector();
        for (std::size_t p : {1u, 0u}) {
          const std::vector<float> v = b.gradient(p, 0).to_vector();
          all.insert(all.end(), v.begin(), v.end());
        }
        got[static_cast<std::size_t>(c.rank())] = all;
      }
    });
    std::vector<float> want;
    for (std::size_t i = 0; i < 40; ++i)
      want.push_back(round16(round16(0.5f * value(0, i)) + round16(0.5f * value(1, i))));
    for (std::size_t i = 0; i < 5; ++i) want.push_back(want[i]);
    for (std::size_t i = 0; i < 3; ++i) want.push_back(0.0f);
    for (std::size_t r = 0; r < 2; ++r) {
      EXPECT_EQ(got[r], want) << dtype_name(wire) << " rank " << r;
      EXPECT_EQ(bad[r], "'mid'") << dtype_name(wire) << " rank " << r;
    }
  }
}

// In bf16 precision with a bf16 wire, a linear weight's gradient leaves backward scaled and rounded
// in its wire slot when the step offers scaled destinations (one backward pass): the hook sees the
// slot itself and copies nothing, the next pass writes f32 again (the destination was given up),
// and the allreduced means have the bits of the hook's own cast.
TEST(Buckets, ABf16WireSlotTakesALinearWeightGradientStraightFromBackward) {
  if (!cpu_has_bf16()) GTEST_SKIP() << "this CPU has no bf16 dot products";
  const ComputePrecisionScope bf16(ComputePrecision::kBF16);
  std::vector<float> wv(6 * 40);
  for (std::size_t i = 0; i < wv.size(); ++i) wv[i] = 0.01f * static_cast<float>((i * 7) % 23) - 0.1f;
  std::array<std::array<std::vector<float>, 2>, 2> means;  // [scaled][rank]
  for (const bool scaled : {false, true}) {
    comm::run_local(2, [&](comm::Communicator& c) {
      set_num_threads(1);
      std::vector<Variable> ps{Variable(Tensor::from_vector(wv, {6, 40}), true), Variable(Tensor::zeros({6}), true)};
      std::vector<float> xv(5 * 40);
      for (std::size_t i = 0; i < xv.size(); ++i) xv[i] = 0.02f * static_cast<float>((i * 5 + 3 * c.rank()) % 17);
      const Variable x(Tensor::from_vector(xv, {5, 40}), false);
      GradientBuckets b(ps, {"fc.weight", "fc.bias"}, std::size_t{1} << 20, DType::kBF16, 1, 0.5);
      std::vector<DType> seen;
      for (std::size_t i = 0; i < ps.size(); ++i) {
        ps[i].add_grad_ready_hook([&, i](Variable& v) {
          if (i == 0) seen.push_back(v.grad().dtype());
          b.add(i, v.grad(), 0);
        });
      }
      const auto loss = [&] {
        return ops::softmax_cross_entropy(ops::linear(x, ps[0], ps[1]), Tensor::from_labels({0, 1, 2, 3, 4}));
      };
      b.begin(0, scaled);
      loss().backward();
      b.complete(0);
      b.reduce(c, 0, 0, comm::Algorithm::kRing);
      EXPECT_TRUE(b.written_in_place(0, 0)) << "into its wire slot, or else into its f32 slot";
      means[scaled ? 1 : 0][static_cast<std::size_t>(c.rank())] = b.gradient(0, 0).to_vector();
      for (Variable& p : ps) p.zero_grad();
      loss().backward();  // a second pass of the step: the destination was given up
      EXPECT_EQ(seen, (std::vector<DType>{scaled ? DType::kBF16 : DType::kF32, DType::kF32}));
      for (Variable& p : ps) p.clear_grad_ready_hooks();
    });
  }
  for (std::size_t r = 0; r < 2; ++r) EXPECT_EQ(means[1][r], means[0][r]) << "rank " << r;
}

// Except with shm and f32 on the wire, whose buckets must lie in shared memory: `auto` picks shm
// for ranks of one host, and then every gradient is copied in.
TEST(DataParallel, LargeGradientsAreAllreducedWhereBackwardLeftThem) {
  for (comm::Algorithm a : {comm::Algorithm::kRing, comm::Algorithm::kAuto}) {
    comm::run_local(2, [&](comm::Communicator& c) {
      set_num_threads(1);
      Rng rng(1);
      auto model = make_model("mlp", {1, 28, 28, 10}, rng);
      auto opt = make_optimizer({}, model->parameters());
      CommWorker worker(c);
      DataParallelConfig config;
      config.algorithm = a;
      DataParallelUpdater up(*model, *opt, worker, config);
      Batch batch{Tensor::full({4, 1, 28, 28}, 0.5), Tensor::from_labels({1, 2, 3, 4}), {}};
      up.update(batch, 0);
      const GradientBuckets& b = up.buckets();
      std::size_t adopted = 0, single = 0;
      for (std::size_t k = 0; k < b.num_buckets(); ++k) {
        single += b.layout().buckets[k].size() == 1 ? 1 : 0;
        adopted += b.adopted(k, 0) ? 1 : 0;
      }
      EXPECT_GT(single, 0u) << "mlp's first weight is over 1 MiB: a bucket of its own";
      if (a == comm::Algorithm::kRing) {
        EXPECT_EQ(adopted, single) << "every one-parameter bucket took its gradient over";
      } else {
        EXPECT_EQ(up.algorithm(), comm::Algorithm::kShm) << "auto on ranks that share memory";
        EXPECT_EQ(adopted, 0u) << "shm's f32 buckets are in shared memory";
      }
      // Every linear weight's gradient is written by backward into its slot where its bucket has
      // a buffer of its own (ring: the buckets of several parameters; shm: all), so not copied.
      const auto named = model->named_parameters();
      for (std::size_t i = 0; i < named.size(); ++i) {
        const bool weight = named[i].first.ends_with("weight");
        const bool own_buffer = a == comm::Algorithm::kAuto || b.layout().buckets[b.layout().bucket_of[i]].size() > 1;
        EXPECT_EQ(b.written_in_place(i, 0), weight && own_buffer) << named[i].first;
      }
    });
  }
}

// An identity op whose gradient is NaN on rank 1: the allreduced gradient is NaN everywhere.
class PoisonGradient : public Module {
 public:
  explicit PoisonGradient(bool poison) : Module("poison"), poison_(poison) {}
  Variable forward(const Variable& x) override {
    return Variable::from_op(x.data(), "poison", {x}, [p = poison_](const Tensor& g) {
      Tensor d = g.clone();
      if (p) d.fill(std::nan(""));
      return std::vector<Tensor>{d};
    });
  }

 private:
  bool poison_;
};

// Ring scales and checks each bucket after its allreduce; auto (shm here) inside the reduction,
// where each rank checks only the block it sums.
TEST(DataParallel, NonFiniteGradientStopsNamingStepAndParameter) {
  for (comm::Algorithm a : {comm::Algorithm::kRing, comm::Algorithm::kAuto}) {
    std::vector<std::string> errors(2);
    comm::run_local(2, [&](comm::Communicator& c) {
      set_num_threads(1);
      Rng rng(1);
      Sequential model;
      model.add("flatten", std::make_shared<Flatten>());
      model.add("fc", std::make_shared<Linear>(784, 10, true, rng));
      model.add("poison", std::make_shared<PoisonGradient>(c.rank() == 1));
      auto opt = make_optimizer({}, model.parameters());
      CommWorker worker(c);
      DataParallelConfig config;
      config.algorithm = a;
      DataParallelUpdater up(model, *opt, worker, config);
      Batch b{Tensor::full({4, 1, 28, 28}, 0.5), Tensor::from_labels({1, 2, 3, 4}), {}};
      try {
        up.update(b, 7);
      } catch (const NumericError& e) {
        errors[static_cast<std::size_t>(c.rank())] = e.what();
      }
    });
    for (const std::string& e : errors) {
      EXPECT_NE(e.find("'fc."), std::string::npos) << comm::algorithm_name(a) << ": " << e;
      EXPECT_NE(e.find("step 7"), std::string::npos) << comm::algorithm_name(a) << ": " << e;
    }
  }
}

}  // namespace
}  // namespace dtrain
