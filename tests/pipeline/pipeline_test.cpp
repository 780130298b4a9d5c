// Pipelines on the local-threads transport (each stage a thread): the differentiable transfers
// and both schedules give the loss and every gradient of the unsplit model (the ChainerMN test
// pattern: every rank builds the whole model from one seed and keeps its part), 20 steps of
// training agree, every (K, m) ends, a stage that stops makes the others fail within the timeout,
// and the stages hold the activations the schedule says.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <mutex>

#include "autograd/ops.h"
#include "comm/local_transport.h"
#include "core/error.h"
#include "core/random.h"
#include "core/threads.h"
#include "core/timer.h"
#include "nn/models/models.h"
#include "optim/optimizer.h"
#include "pipeline/p2p.h"
#include "pipeline/stage_runner.h"
#include "pipeline/stages.h"

namespace dtrain::pipeline {
namespace {

constexpr std::uint64_t kSeed = 5;

std::shared_ptr<Sequential> build(const std::string& name) {
  Rng rng(kSeed);
  auto m = std::dynamic_pointer_cast<Sequential>(make_model(name, {1, 28, 28, 10}, rng));
  EXPECT_TRUE(m != nullptr);
  return m;
}

struct Batch16 {
  Tensor x, y;
};

Batch16 batch(std::int64_t rows, std::uint64_t seed) {
  Rng rng(seed);
  std::vector<float> x(static_cast<std::size_t>(rows * 28 * 28));
  for (float& v : x) v = static_cast<float>(rng.normal());
  std::vector<std::int32_t> y(static_cast<std::size_t>(rows));
  for (auto& v : y) v = static_cast<std::int32_t>(rng.below(10));
  return {Tensor::from_vector(x, {rows, 1, 28, 28}), Tensor::from_labels(y)};
}

Shape with_rows(std::int64_t rows, const Shape& sample) {
  std::vector<std::int64_t> d{rows};
  d.insert(d.end(), sample.dims().begin(), sample.dims().end());
  return Shape(d);
}

using Grads = std::map<std::string, std::vector<float>>;

// The unsplit model's loss and gradients on the whole batch.
std::pair<double, Grads> reference(const std::string& model, const Batch16& b) {
  auto net = build(model);
  Variable loss = ops::softmax_cross_entropy((*net)(Variable(b.x)), b.y);
  loss.backward();
  Grads g;
  for (auto& [name, p] : net->named_parameters()) g[name] = p.grad().to_plain().to_vector();
  return {loss.data().item(), g};
}

void expect_close(const std::vector<float>& got, const std::vector<float>& want, double rel, const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  double worst = 0, scale = 0;
  for (std::size_t i = 0; i < got.size(); ++i) {
    worst = std::max(worst, std::abs(static_cast<double>(got[i]) - want[i]));
    scale = std::max(scale, std::abs(static_cast<double>(want[i])));
  }
  EXPECT_LE(worst, rel * std::max(scale, 1e-30)) << what << ": largest difference " << worst << " of " << scale;
}

// Runs `fn(stage module, runner config, p2p)` on K threads, stage k on rank k.
template <typename Fn>
void run_stages(const std::string& model, int k, int m, ScheduleKind kind, double timeout_s, Fn fn) {
  comm::run_local_transports(k, [&](comm::Transport& t) {
    set_num_threads(1);
    auto net = build(model);
    const StageBounds bounds = split_balanced(std::vector<double>(net->size(), 1.0), k);
    const auto shapes = boundary_shapes(*net, bounds, {1, 28, 28});
    const int s = t.rank();
    auto stage = make_stage(*net, bounds[s], bounds[s + 1]);
    P2P p2p(t, timeout_s);
    StageConfig c{kind, k, s, m, s - 1, s + 1, shapes[static_cast<std::size_t>(s)]};
    fn(*stage, c, p2p);
  });
}

TEST(PipelineP2P, SendAndRecvGiveTheUnsplitGradients) {
  const Batch16 b = batch(8, 1);
  for (const std::string model : {"mlp", "lenet"}) {
    // Not a structured binding: clang 14 (the sanitizer build) cannot capture one in a lambda.
    const auto ref = reference(model, b);
    const double want_loss = ref.first;
    const Grads& want = ref.second;
    for (int k = 2; k <= 4; ++k) {
      std::mutex mu;
      Grads got;
      double got_loss = 0;
      run_stages(model, k, 1, ScheduleKind::kGPipe, 30, [&](Sequential& stage, const StageConfig& c, P2P& p2p) {
        Variable x = c.stage == 0 ? Variable(b.x) : recv(p2p, with_rows(8, c.input_sample), c.previous_rank, 0);
        Variable y = stage(x);
        if (c.stage == k - 1) {
          Variable loss = ops::softmax_cross_entropy(y, b.y);
          loss.backward();
          got_loss = loss.data().item();
        } else {
          send(y, p2p, c.next_rank, 0).backward();
        }
        p2p.finish_sends("test");
        const std::lock_guard lock(mu);
        for (auto& [name, p] : stage.named_parameters()) got[name] = p.grad().to_plain().to_vector();
      });
      EXPECT_NEAR(got_loss, want_loss, 1e-5 * std::abs(want_loss)) << model << " K=" << k;
      ASSERT_EQ(got.size(), want.size()) << model;
      for (auto& [name, g] : want) expect_close(got[name], g, 1e-5, fmt::format("{} K={} {}", model, k, name));
    }
  }
}

// Rank 0 holds parts 0 and 2 of a three-part mlp, rank 1 part 1: rank 0's recv names the
// delegate of its earlier send, so its backward sends part 2's input gradient before it waits
// for part 0's output gradient, as rank 1 expects.
TEST(PipelineP2P, ARankHoldingTwoPartsOrdersItsBackwardByTheDelegate) {
  const Batch16 b = batch(4, 2);
  const auto ref = reference("mlp", b);
  const double want_loss = ref.first;
  const Grads& want = ref.second;
  std::mutex mu;
  Grads got;
  comm::run_local_transports(2, [&](comm::Transport& t) {
    set_num_threads(1);
    auto net = build("mlp");
    const StageBounds bounds{0, 2, 4, 6};
    P2P p2p(t, 30);
    std::vector<std::shared_ptr<Sequential>> parts;
    if (t.rank() == 0) {
      parts = {make_stage(*net, 0, 2), make_stage(*net, 4, 6)};
      Variable delegate = send((*parts[0])(Variable(b.x)), p2p, 1, 0);
      Variable h = recv(p2p, {4, 512}, 1, 1, delegate);
      Variable loss = ops::softmax_cross_entropy((*parts[1])(h), b.y);
      loss.backward();
      EXPECT_NEAR(loss.data().item(), want_loss, 1e-5 * std::abs(want_loss));
    } else {
      parts = {make_stage(*net, 2, 4)};
      Variable h = recv(p2p, {4, 512}, 0, 0);
      send((*parts[0])(h), p2p, 0, 1).backward();
    }
    p2p.finish_sends("test");
    const std::lock_guard lock(mu);
    for (auto& part : parts)
      for (auto& [name, p] : part->named_parameters()) got[name] = p.grad().to_plain().to_vector();
  });
  ASSERT_EQ(got.size(), want.size());
  for (auto& [name, g] : want) expect_close(got[name], g, 1e-5, name);
}

TEST(PipelineP2P, BadPeersAndTagsNameTheProblem) {
  comm::run_local_transports(2, [&](comm::Transport& t) {
    P2P p2p(t, 5);
    Variable x(Tensor::zeros({2, 2}), true);
    EXPECT_THROW(send(x, p2p, t.rank(), 0), InputError);
    EXPECT_THROW(send(x, p2p, 1 - t.rank(), kMaxP2PTag + 1), InputError);
    EXPECT_THROW(recv(p2p, {2, 2}, 1 - t.rank(), -1), InputError);
    EXPECT_EQ(p2p.sends_in_flight(), 0u);
  });
}

TEST(PipelineRunner, EverySchedulesStepEqualsOneFullBatchStep) {
  const Batch16 b = batch(16, 3);
  for (const std::string model : {"mlp", "lenet"}) {
    // Not a structured binding: clang 14 (the sanitizer build) cannot capture one in a lambda.
    const auto ref = reference(model, b);
    const double want_loss = ref.first;
    const Grads& want = ref.second;
    for (auto kind : {ScheduleKind::kGPipe, ScheduleKind::kOneFOneB})
      for (int k = 2; k <= 4; ++k)
        for (int m : {1, 2, 4, 8}) {
          std::mutex mu;
          Grads got;
          double got_loss = 0;
          std::vector<int> peaks(k);
          run_stages(model, k, m, kind, 30, [&](Sequential& stage, const StageConfig& c, P2P& p2p) {
            StageRunner runner(stage, p2p, c);
            const StageStep r = runner.run(b.x, b.y);
            const std::lock_guard lock(mu);
            if (c.stage == k - 1) got_loss = r.loss;
            peaks[c.stage] = r.peak_in_flight;
            for (auto& [name, p] : stage.named_parameters()) got[name] = p.grad().to_plain().to_vector();
          });
          const std::string what = fmt::format("{} {} K={} m={}", model, schedule_name(kind), k, m);
          EXPECT_NEAR(got_loss, want_loss, 1e-5 * std::abs(want_loss)) << what;
          for (auto& [name, g] : want) expect_close(got[name], g, 1e-5, what + " " + name);
          for (int s = 0; s < k; ++s)
            EXPECT_EQ(peaks[s], kind == ScheduleKind::kGPipe ? m : std::min(k - s, m)) << what << " stage " << s;
        }
  }
}

TEST(PipelineRunner, TwentyStepsOfTrainingAgreeWithTheUnsplitModel) {
  constexpr int kSteps = 20;
  std::vector<Batch16> batches;
  for (int i = 0; i < kSteps; ++i) batches.push_back(batch(16, 100 + i));
  auto net = build("mlp");
  OptimizerConfig oc;
  oc.lr = 0.05;
  auto opt = make_optimizer(oc, net->parameters());
  for (const Batch16& b : batches) {
    opt->zero_grad();
    ops::softmax_cross_entropy((*net)(Variable(b.x)), b.y).backward();
    opt->step();
  }
  Grads want;
  for (auto& [name, p] : net->named_parameters()) want[name] = p.data().to_plain().to_vector();
  for (auto kind : {ScheduleKind::kGPipe, ScheduleKind::kOneFOneB})
    for (int k : {2, 4})
      for (int m : {1, 2, 4, 8}) {
        std::mutex mu;
        Grads got;
        run_stages("mlp", k, m, kind, 30, [&](Sequential& stage, const StageConfig& c, P2P& p2p) {
          auto stage_opt = make_optimizer(oc, stage.parameters());
          StageRunner runner(stage, p2p, c);
          for (const Batch16& b : batches) {
            stage_opt->zero_grad();
            runner.run(b.x, b.y);
            stage_opt->step();
          }
          const std::lock_guard lock(mu);
          for (auto& [name, p] : stage.named_parameters()) got[name] = p.data().to_plain().to_vector();
        });
        for (auto& [name, w] : want) {
          ASSERT_EQ(got[name].size(), w.size());
          double worst = 0;
          for (std::size_t i = 0; i < w.size(); ++i) worst = std::max(worst, std::abs(double(got[name][i]) - w[i]));
          EXPECT_LE(worst, 1e-4) << schedule_name(kind) << " K=" << k << " m=" << m << " " << name;
        }
      }
}

// K in 2..4 and m in 1..8, m < K included, all end; m that does not divide the batch stops every
// stage at once with the constraint named.
TEST(PipelineRunner, EveryStageAndMicroBatchCountEndsOrNamesTheConstraint) {
  const Batch16 b = batch(840, 4);  // 840 = lcm(1..8)
  for (auto kind : {ScheduleKind::kGPipe, ScheduleKind::kOneFOneB})
    for (int k = 2; k <= 4; ++k)
      for (int m = 1; m <= 8; ++m)
        run_stages("mlp", k, m, kind, 30, [&](Sequential& stage, const StageConfig& c, P2P& p2p) {
          StageRunner(stage, p2p, c).run(b.x, b.y);
        });
  const Batch16 odd = batch(10, 5);
  try {
    run_stages("mlp", 2, 4, ScheduleKind::kOneFOneB, 30, [&](Sequential& stage, const StageConfig& c, P2P& p2p) {
      StageRunner(stage, p2p, c).run(odd.x, odd.y);
    });
    FAIL() << "4 micro-batches of 10 rows ran";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("--micro-batches 4 does not divide the batch of 10"), std::string::npos)
        << e.what();
  }
}

// Stage 1 of 3 stops answering (it returns without running its part): stages 0 and 2 fail
// within the timeout with an error naming the rank they waited for.
TEST(PipelineRunner, AStageThatStopsMakesTheOthersFailWithinTheTimeout) {
  const Batch16 b = batch(8, 6);
  const Stopwatch sw;
  try {
    comm::run_local_transports(3, [&](comm::Transport& t) {
      set_num_threads(1);
      if (t.rank() == 1) return;
      auto net = build("mlp");
      const StageBounds bounds = split_balanced(std::vector<double>(net->size(), 1.0), 3);
      const auto shapes = boundary_shapes(*net, bounds, {1, 28, 28});
      const int s = t.rank();
      auto stage = make_stage(*net, bounds[s], bounds[s + 1]);
      P2P p2p(t, 1.0);
      StageRunner(*stage, p2p, {ScheduleKind::kOneFOneB, 3, s, 2, s - 1, s + 1, shapes[s]}).run(b.x, b.y);
    });
    FAIL() << "the pipeline ran without its middle stage";
  } catch (const CommError& e) {
    EXPECT_NE(std::string(e.what()).find("rank 1"), std::string::npos) << e.what();
  }
  EXPECT_LT(sw.seconds(), 10.0);
}

}  // namespace
}  // namespace dtrain::pipeline
