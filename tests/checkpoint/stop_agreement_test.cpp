// The stop agreement of ranks that write checkpoints and ranks that do not (train/stop_extension.h):
// a Checkpointer and a StopExtension join an agreement at the same step boundaries, so a
// parameter-server worker or a pipeline stage never waits in an agreement the writer skipped;
// whatever the agreement answers ends the run after that step, with a checkpoint where one is
// written.
#include <gtest/gtest.h>

#include <csignal>
#include <utility>
#include <vector>

#include "checkpoint/checkpoint_test_util.h"
#include "core/threads.h"
#include "optim/schedule.h"
#include "train/checkpointer.h"
#include "train/stop_extension.h"

namespace dtrain {
namespace {

using cktest::TempDir;

const Dataset& stop_test_data() {
  static const Dataset ds = make_synthetic_dataset(96, 1, 8, 8, 10, 5);
  return ds;
}

// Each agreement as (global step, step within the epoch); answers `answer` at call `stop_call`.
struct Agreement {
  std::vector<std::pair<std::int64_t, std::int64_t>> calls;
  int stop_call = -1;
  const TrainerState* state = nullptr;
  int operator()(int mine) {
    calls.emplace_back(state->iteration, state->epoch_iteration);
    return static_cast<int>(calls.size()) - 1 == stop_call ? SIGUSR1 : mine;
  }
};

// Records the trainer's state for the agreement (added first: extensions run in order).
class Watch : public Extension {
 public:
  explicit Watch(Agreement& a) : a_(a) {}
  void on_start(TrainerState& s) override { a_.state = &s; }

 private:
  Agreement& a_;
};

struct StopRun {
  std::vector<std::pair<std::int64_t, std::int64_t>> calls;
  std::string stopped_by;
  std::int64_t stopped_after = -1;
  std::vector<std::string> checkpoints;
};

// 3 epochs of 6 steps (batch 16 of 96 samples); `writer`: a Checkpointer every 4 steps, else a
// StopExtension.
StopRun run_three_epochs(bool writer, int stop_call, const std::string& dir) {
  set_num_threads(1);
  auto model = cktest::small_model(3);
  OptimizerConfig oc;
  oc.name = "sgd";
  oc.lr = 0.05;
  auto opt = make_optimizer(oc, model->parameters());
  ScheduleConfig sc;
  sc.base_lr = oc.lr;
  sc.total_epochs = 3;
  const auto schedule = make_schedule(sc);
  const Sampler sampler(stop_test_data().size(), SamplerConfig::train(16, 4, 0, 1));
  StandardUpdater updater(*model, *opt);
  TrainerOptions to;
  to.epochs = 3;
  Trainer trainer(updater, *opt, *schedule, stop_test_data(), sampler, to);
  Agreement agreement;
  agreement.stop_call = stop_call;
  trainer.add_extension(std::make_unique<Watch>(agreement));
  std::unique_ptr<Checkpointer> checkpointer;
  auto agree = [&agreement](int mine) { return agreement(mine); };
  if (writer) {
    CheckpointerOptions co;
    co.dir = dir;
    co.schedule = parse_checkpoint_schedule("4");
    co.keep = 0;
    co.iterations_per_epoch = sampler.batches_per_epoch();
    co.stop_signal = [] { return 0; };
    co.agree_stop = agree;
    checkpointer = std::make_unique<Checkpointer>(co, *model, *opt);
    trainer.add_extension(checkpointer->extension());
  } else {
    trainer.add_extension(std::make_unique<StopExtension>(agree));
  }
  const TrainerState end = trainer.run();
  StopRun r;
  r.calls = agreement.calls;
  r.stopped_by = end.stopped_by;
  if (!end.stopped_by.empty()) r.stopped_after = end.iteration;
  if (writer) r.checkpoints = CheckpointDir(dir).list();
  return r;
}

TEST(StopAgreement, WritersAndOthersAgreeAtTheSameBoundaries) {
  TempDir a, b;
  const StopRun writer = run_three_epochs(true, -1, a.str()), other = run_three_epochs(false, -1, b.str());
  EXPECT_TRUE(writer.stopped_by.empty());
  EXPECT_EQ(writer.calls, other.calls);
  // After steps 1-5 of each epoch (not the 6th, which ends it) and after epochs 1 and 2 (not 3).
  std::vector<std::pair<std::int64_t, std::int64_t>> expected;
  for (std::int64_t epoch = 0; epoch < 3; ++epoch) {
    for (std::int64_t i = 1; i <= 5; ++i) expected.emplace_back(6 * epoch + i, i);
    if (epoch < 2) expected.emplace_back(6 * epoch + 6, 6);
  }
  EXPECT_EQ(writer.calls, expected);
}

TEST(StopAgreement, AnotherRanksSignalStopsTheRunAfterThatStep) {
  TempDir a, b;
  // The 7th agreement is after global step 7 (epoch 2's first step): a rank elsewhere was signalled.
  const StopRun writer = run_three_epochs(true, 6, a.str()), other = run_three_epochs(false, 6, b.str());
  for (const StopRun* r : {&writer, &other}) {
    EXPECT_EQ(r->stopped_by, "SIGUSR1");
    EXPECT_EQ(r->stopped_after, 7);
    EXPECT_EQ(r->calls.size(), 7u);
  }
  // The writer checkpoints the step it stopped after (besides its schedule's step 4).
  EXPECT_EQ(writer.checkpoints.front(), CheckpointDir(a.str()).path_for(7));
}

}  // namespace
}  // namespace dtrain
