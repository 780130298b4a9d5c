// Exact resume through the Trainer: a run that crashes between checkpoints (or stops half way) and
// is resumed ends with bit-identical parameters, batch-norm statistics, optimizer state, dropout
// counters and epoch totals to an uninterrupted run; in one process and with two data-parallel
// ranks on the local-threads transport.
#include <gtest/gtest.h>

#include <atomic>
#include <csignal>
#include <map>
#include <mutex>

#include "checkpoint/checkpoint_test_util.h"
#include "comm/local_transport.h"
#include "core/threads.h"
#include "optim/schedule.h"
#include "parallel/data_parallel.h"
#include "train/checkpointer.h"
#include "train/stop_signal.h"

namespace dtrain {
namespace {

using cktest::snapshot;
using cktest::TempDir;

constexpr std::int64_t kEpochs = 3;

const Dataset& data() {
  static const Dataset ds = make_synthetic_dataset(256, 1, 8, 8, 10, 3);
  return ds;
}

struct SimulatedCrash : std::runtime_error {
  SimulatedCrash() : std::runtime_error("simulated crash") {}
};

// Throws at a global step, like a process killed after that step (the checkpoint extension, added
// before it, has already run).
class CrashAt : public Extension {
 public:
  explicit CrashAt(std::int64_t step) : step_(step) {}
  void on_iteration(TrainerState& s) override {
    if (s.iteration == step_) throw SimulatedCrash();
  }

 private:
  std::int64_t step_;
};

// Records each epoch's totals as the log would see them.
class EpochTotalsLog : public Extension {
 public:
  explicit EpochTotalsLog(std::map<std::int64_t, std::vector<double>>& out) : out_(out) {}
  void on_epoch_end(TrainerState& s) override {
    out_[s.epoch] = {s.epoch_loss_sum, static_cast<double>(s.epoch_correct), static_cast<double>(s.epoch_samples)};
  }

 private:
  std::map<std::int64_t, std::vector<double>>& out_;
};

struct RunSpec {
  std::string dir;
  std::string every = "5";
  std::int64_t crash_at = -1;  // global step after which the run dies
  bool resume = false;
  std::int64_t epochs = kEpochs;
  // A stop signal (train/stop_signal.h) arrives at this rank after this global step; with
  // real_signal the process raises SIGUSR2 through the installed handler, otherwise only
  // `stop_rank`'s checkpointer sees one.
  std::int64_t stop_at = -1;
  int stop_rank = 0;
  bool real_signal = false;
};

struct RunResult {
  std::vector<std::uint8_t> state;                     // every byte of model and optimizer state
  std::map<std::int64_t, std::vector<double>> totals;  // per epoch
  bool crashed = false;
  std::string stopped_by;
  std::int64_t stopped_at = -1;  // global steps done when the run stopped
};

// Delivers the stop signal after a step, before the checkpoint extension looks for it.
class SignalAt : public Extension {
 public:
  SignalAt(std::int64_t step, bool raise_it, std::atomic<int>& flag) : step_(step), raise_(raise_it), flag_(flag) {}
  void on_iteration(TrainerState& s) override {
    if (s.iteration != step_) return;
    if (raise_) {
      std::raise(SIGUSR2);
    } else {
      flag_ = SIGUSR1;
    }
  }

 private:
  std::int64_t step_;
  bool raise_;
  std::atomic<int>& flag_;
};

// One rank's training run; `comm` is null in a single process.
RunResult train(const RunSpec& spec, comm::Communicator* comm, std::int64_t per_rank_batch) {
  set_num_threads(1);
  const int rank = comm ? comm->rank() : 0, world = comm ? comm->size() : 1;
  auto model = cktest::small_model(11);
  OptimizerConfig oc;
  oc.name = "adam";
  oc.lr = 0.01;
  auto opt = make_optimizer(oc, model->parameters());
  ScheduleConfig sc;
  sc.base_lr = oc.lr;
  sc.total_epochs = static_cast<double>(kEpochs);
  sc.warmup_epochs = 0.5;
  const auto schedule = make_schedule(sc);
  const Sampler sampler(data().size(), SamplerConfig::train(per_rank_batch, 9, rank, world));

  std::unique_ptr<CommWorker> worker;
  std::unique_ptr<Updater> updater;
  CheckpointerOptions co;
  co.dir = spec.dir;
  co.schedule = parse_checkpoint_schedule(spec.every);
  co.keep = 2;
  co.config = {{"model", "small"}, {"epochs", spec.epochs}};
  co.iterations_per_epoch = sampler.batches_per_epoch();
  co.group.rank = rank;
  co.group.size = world;
  TrainerOptions to;
  to.epochs = spec.epochs;
  to.world_size = world;
  to.loader.prefetch = 1;
  to.loader.augment.flip = true;
  to.loader.augment.translate = 1;
  to.loader.seed = 9;
  if (comm != nullptr) {
    worker = std::make_unique<CommWorker>(*comm);
    co.group.allgather = [&](void* all, std::size_t bytes) {
      worker->run([&](comm::Communicator& c) { c.allgather(all, bytes); });
    };
    co.group.broadcast = [&](void* p, std::size_t bytes) {
      worker->run([&](comm::Communicator& c) { c.broadcast(p, bytes, 0); });
    };
    to.sum_across_ranks = [&](std::vector<double>& v) {
      std::vector<float> f(v.begin(), v.end());
      worker->run([&](comm::Communicator& c) { c.allreduce(f.data(), f.size(), DType::kF32); });
      for (std::size_t i = 0; i < v.size(); ++i) v[i] = f[i];
    };
  }
  std::atomic<int> signal_flag{0};
  if (spec.stop_at >= 0 && spec.real_signal) {
    install_stop_signals();
    co.stop_signal = stop_signal_received;
  } else if (spec.stop_at >= 0) {
    co.stop_signal = [&signal_flag] { return signal_flag.load(); };
  }
  Checkpointer checkpointer(co, *model, *opt);
  if (comm != nullptr) {
    updater = std::make_unique<DataParallelUpdater>(*model, *opt, *worker, DataParallelConfig{});
  } else {
    updater = std::make_unique<StandardUpdater>(*model, *opt);
  }
  // After the updater: its start-up broadcast would overwrite rank 1's restored statistics.
  if (spec.resume) to.start_iteration = checkpointer.resume();
  RunResult r;
  Trainer trainer(*updater, *opt, *schedule, data(), sampler, to);
  if (spec.stop_at >= 0 && (spec.real_signal || rank == spec.stop_rank)) {
    trainer.add_extension(std::make_unique<SignalAt>(spec.stop_at, spec.real_signal, signal_flag));
  }
  trainer.add_extension(checkpointer.extension());
  trainer.add_extension(std::make_unique<EpochTotalsLog>(r.totals));
  if (spec.crash_at >= 0) trainer.add_extension(std::make_unique<CrashAt>(spec.crash_at));
  try {
    const TrainerState end = trainer.run();
    r.stopped_by = end.stopped_by;
    if (!end.stopped_by.empty()) r.stopped_at = end.iteration;
  } catch (const SimulatedCrash&) {
    r.crashed = true;
  }
  updater.reset();
  r.state = snapshot(*model, opt.get());
  if (spec.real_signal) clear_stop_signal();
  return r;
}

TEST(Resume, CrashBetweenCheckpointsThenResumeIsBitIdentical) {
  TempDir a, b;
  const RunResult full = train({a.str()}, nullptr, 16);  // 16 steps per epoch, 48 in all
  ASSERT_FALSE(full.crashed);

  // Dies after step 23 (mid-epoch 2); the newest checkpoint is step 20.
  const RunResult crashed = train({b.str(), "5", 23}, nullptr, 16);
  ASSERT_TRUE(crashed.crashed);
  EXPECT_EQ(CheckpointDir(b.str()).list().front(), CheckpointDir(b.str()).path_for(20));
  const RunResult resumed = train({b.str(), "5", -1, true}, nullptr, 16);
  EXPECT_EQ(resumed.state, full.state);
  // The resumed epoch's totals (restored from the checkpoint, then continued) and the last one.
  EXPECT_EQ(resumed.totals.at(1), full.totals.at(1));
  EXPECT_EQ(resumed.totals.at(2), full.totals.at(2));
  EXPECT_EQ(resumed.totals.count(0), 0u);
}

TEST(Resume, StopAtAnEpochBoundaryAndContinueIsBitIdentical) {
  TempDir a, b;
  const RunResult full = train({a.str(), "1e"}, nullptr, 16);
  // The same run stopped half way through (after a checkpoint), then continued.
  const RunResult crashed = train({b.str(), "1e", 24}, nullptr, 16);
  ASSERT_TRUE(crashed.crashed);
  EXPECT_EQ(CheckpointDir(b.str()).list().front(), CheckpointDir(b.str()).path_for(16));
  const RunResult resumed = train({b.str(), "1e", -1, true}, nullptr, 16);
  EXPECT_EQ(resumed.state, full.state);
  // Nothing to do once training is complete: resuming again changes nothing.
  const RunResult again = train({b.str(), "1e", -1, true}, nullptr, 16);
  EXPECT_EQ(again.state, full.state);
  EXPECT_TRUE(again.totals.empty());
}

TEST(Resume, AStopSignalCheckpointsAtTheNextStepAndTheResumedRunIsBitIdentical) {
  TempDir a, b;
  const RunResult full = train({a.str(), "1e"}, nullptr, 16);
  // SIGUSR2 after step 21 (mid-epoch 2): a checkpoint at step 21, then the run ends.
  RunSpec stop{b.str(), "1e"};
  stop.stop_at = 21;
  stop.real_signal = true;
  const RunResult stopped = train(stop, nullptr, 16);
  EXPECT_EQ(stopped.stopped_by, "SIGUSR2");
  EXPECT_EQ(stopped.stopped_at, 21);
  EXPECT_EQ(CheckpointDir(b.str()).list().front(), CheckpointDir(b.str()).path_for(21));
  EXPECT_EQ(stop_signal_received(), 0);
  const RunResult resumed = train({b.str(), "1e", -1, true}, nullptr, 16);
  EXPECT_TRUE(resumed.stopped_by.empty());
  EXPECT_EQ(resumed.state, full.state);
  EXPECT_EQ(resumed.totals.at(1), full.totals.at(1));
}

TEST(Resume, AStopSignalAtAnEpochsLastStepCheckpointsAfterTheEvaluation) {
  TempDir a, b;
  const RunResult full = train({a.str(), "5"}, nullptr, 16);
  RunSpec stop{b.str(), "5"};
  stop.stop_at = 16;  // the last step of epoch 1: saved as the epoch's end
  const RunResult stopped = train(stop, nullptr, 16);
  EXPECT_EQ(stopped.stopped_by, "SIGUSR1");
  EXPECT_EQ(stopped.stopped_at, 16);
  EXPECT_EQ(stopped.totals.size(), 1u);  // epoch 1's end ran before the stop
  EXPECT_EQ(train({b.str(), "5", -1, true}, nullptr, 16).state, full.state);
}

TEST(Resume, ResumeWithNoCheckpointStartsAfresh) {
  TempDir a, b;
  const RunResult full = train({a.str()}, nullptr, 16);
  const RunResult fresh = train({b.str(), "5", -1, true}, nullptr, 16);
  EXPECT_EQ(fresh.state, full.state);
}

TEST(Resume, ADifferentConfigurationIsRefused) {
  TempDir a;
  train({a.str()}, nullptr, 16);
  auto model = cktest::small_model(11);
  auto opt = make_optimizer(OptimizerConfig{"adam"}, model->parameters());
  CheckpointerOptions co;
  co.dir = a.str();
  co.config = {{"model", "other"}, {"epochs", 9}};
  Checkpointer c(co, *model, *opt);
  try {
    c.resume();
    ADD_FAILURE();
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("model \"small\" (this run: \"other\")"), std::string::npos) << e.what();
    EXPECT_EQ(std::string(e.what()).find("epochs"), std::string::npos) << "epochs may change: " << e.what();
  }
}

// Both ranks' states after the run (rank 0's first).
std::vector<RunResult> train_parallel(const RunSpec& spec) {
  std::vector<RunResult> out(2);
  try {
    comm::run_local(2, [&](comm::Communicator& c) { out[static_cast<std::size_t>(c.rank())] = train(spec, &c, 8); });
  } catch (const CommError&) {
    // The simulated crash on one rank aborts the other's collectives.
  }
  return out;
}

TEST(Resume, DataParallelCrashAndResumeIsBitIdenticalOnEveryRank) {
  TempDir a, b;
  const auto full = train_parallel({a.str()});
  ASSERT_FALSE(full[0].state.empty());
  // Batch norm statistics come from each rank's own shard, so the ranks differ there.
  EXPECT_NE(full[0].state, full[1].state);
  const auto crashed = train_parallel({b.str(), "5", 23});
  EXPECT_TRUE(crashed[0].crashed || crashed[1].crashed);
  const auto resumed = train_parallel({b.str(), "5", -1, true});
  EXPECT_EQ(resumed[0].state, full[0].state);
  EXPECT_EQ(resumed[1].state, full[1].state);
  EXPECT_EQ(resumed[0].totals.at(1), full[0].totals.at(1));
  EXPECT_EQ(resumed[0].totals.at(2), full[0].totals.at(2));
}

TEST(Resume, AStopSignalOnOneRankStopsEveryRankAtTheSameStepAndResumesExactly) {
  TempDir a, b;
  const auto full = train_parallel({a.str()});
  RunSpec stop{b.str()};
  stop.stop_at = 13;  // only rank 1 receives it
  stop.stop_rank = 1;
  const auto stopped = train_parallel(stop);
  EXPECT_EQ(stopped[0].stopped_by, "SIGUSR1");
  EXPECT_EQ(stopped[1].stopped_by, "SIGUSR1");
  EXPECT_EQ(stopped[0].stopped_at, 13);
  EXPECT_EQ(stopped[1].stopped_at, 13);
  const auto resumed = train_parallel({b.str(), "5", -1, true});
  EXPECT_EQ(resumed[0].state, full[0].state);
  EXPECT_EQ(resumed[1].state, full[1].state);
}

}  // namespace
}  // namespace dtrain
