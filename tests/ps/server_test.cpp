// Parameter servers and workers as threads on the local transport, with gradients the test
// chooses: no push is lost or applied twice in any mode, the SSP bound holds and is reached, and
// ASP's staleness in updates is about W - 1.
#include "ps/server.h"

#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <thread>

#include "core/error.h"
#include "ps/ps_test_util.h"
#include "ps/ps_worker.h"

namespace dtrain::ps {
namespace {

using testing::PsOutcome;
using testing::run_ps;
using testing::test_config;

// Each worker pushes the constant gradient (rank + 1) `clocks` times with learning rate `lr`,
// sleeping `compute_of(rank)` before each push.
// Worker 0's copy of the servers' stats goes to `reported` when given.
PsOutcome constant_pushes(const PsConfig& config, int clocks, double lr,
                          const std::function<std::chrono::microseconds(int)>& compute_of,
                          std::vector<ServerStats>* reported = nullptr) {
  return run_ps(config, testing::plain_sgd(lr), testing::split_total(), [&](comm::Transport& t) {
    const std::chrono::microseconds compute = compute_of(t.rank());
    testing::constant_push_worker(
        t, config, clocks, lr,
        [compute](int) {
          if (compute.count() > 0) std::this_thread::sleep_for(compute);
        },
        reported);
  });
}

std::chrono::microseconds no_sleep(int) { return std::chrono::microseconds(0); }

TEST(ParameterServer, EveryModeAppliesEveryPushExactlyOnce) {
  constexpr int kClocks = 50, kWorkers = 3;
  for (SyncMode mode : {SyncMode::kBsp, SyncMode::kSsp, SyncMode::kAsp}) {
    for (int servers = 1; servers <= 3; ++servers) {
      const std::string what = std::string(sync_mode_name(mode)) + ", K = " + std::to_string(servers);
      const PsConfig config = test_config(kWorkers, servers, mode, 2);
      // --lr W: SSP and ASP apply lr / W = 1 per push, BSP lr times the mean, so each clock's
      // pushes move every weight by exactly sum(rank + 1) in every mode.
      std::vector<ServerStats> reported;
      const PsOutcome out = constant_pushes(config, kClocks, kWorkers, no_sleep, &reported);
      EXPECT_EQ(out.weights, testing::constant_push_result(kWorkers, kClocks)) << what;
      ASSERT_EQ(reported.size(), static_cast<std::size_t>(servers)) << what;
      for (int k = 0; k < servers; ++k) {
        // Worker 0 received what each server counted.
        const ServerStats& got = reported[static_cast<std::size_t>(k)];
        const ServerStats& kept = out.servers[static_cast<std::size_t>(k)].stats;
        EXPECT_EQ(got.server, k) << what;
        EXPECT_EQ(to_json(got), to_json(kept)) << what;
        EXPECT_EQ(got.gradients, kClocks * kWorkers) << what;
        EXPECT_EQ(got.worker_pushes, std::vector<std::int64_t>(kWorkers, kClocks)) << what;
        EXPECT_EQ(got.gaps.counts(), out.servers[static_cast<std::size_t>(k)].gaps.counts()) << what;
        ASSERT_EQ(got.worker_wait_seconds.size(), static_cast<std::size_t>(kWorkers)) << what;
        for (double wait : got.worker_wait_seconds) EXPECT_GE(wait, 0) << what;
        EXPECT_LE(got.all_running_gradients, got.gradients) << what;
        EXPECT_LE(got.busy_seconds, got.seconds + 1e-9) << what;
        EXPECT_GT(got.queue_depth.total(), 0) << what;
      }
      for (const auto& s : out.servers) {
        EXPECT_EQ(s.gaps.total(), kClocks * kWorkers) << what << ": one record per applied gradient";
        EXPECT_EQ(s.updates, mode == SyncMode::kBsp ? kClocks : kClocks * kWorkers) << what;
        if (mode == SyncMode::kBsp) {
          EXPECT_EQ(s.gaps.max(), 0) << what;
          EXPECT_EQ(s.taus.max(), 0) << what;
        }
        if (mode == SyncMode::kSsp) {
          EXPECT_LE(s.gaps.max(), 2) << what;
        }
      }
    }
  }
}

// f16 and bf16 pushes (their values exact in 16 bits) land exactly too, widened on the servers.
TEST(ParameterServer, SixteenBitPushesApplyEveryPushExactlyOnce) {
  constexpr int kClocks = 20, kWorkers = 3;
  for (DType wire : {DType::kF16, DType::kBF16}) {
    for (SyncMode mode : {SyncMode::kBsp, SyncMode::kSsp, SyncMode::kAsp}) {
      PsConfig config = test_config(kWorkers, 2, mode, 1);
      config.wire = wire;
      const PsOutcome out = constant_pushes(config, kClocks, kWorkers, no_sleep);
      EXPECT_EQ(out.weights, testing::constant_push_result(kWorkers, kClocks))
          << dtype_name(wire) << ", " << sync_mode_name(mode);
    }
  }
  PsConfig bad = test_config(1, 1, SyncMode::kBsp);
  bad.wire = DType::kI32;
  EXPECT_THROW(bad.validate(2), InputError);
}

TEST(ParameterServer, SspWithStalenessZeroNeverReadsAhead) {
  const PsConfig config = test_config(3, 2, SyncMode::kSsp, 0);
  const PsOutcome out =
      constant_pushes(config, 40, 3, [](int rank) { return std::chrono::microseconds(rank == 0 ? 1500 : 0); });
  for (const auto& s : out.servers) {
    EXPECT_EQ(s.gaps.total(), 120);
    EXPECT_EQ(s.gaps.max(), 0) << "staleness 0 reads no weights that lack an update of an older clock";
  }
}

TEST(ParameterServer, SspGapIsBoundedByStalenessAndReachesIt) {
  for (std::int64_t s : {1, 3}) {
    const PsConfig config = test_config(3, 2, SyncMode::kSsp, s);
    // Worker 2 takes twice as long per clock as the others.
    const PsOutcome out =
        constant_pushes(config, 120, 3, [](int rank) { return std::chrono::microseconds(rank == 2 ? 4000 : 2000); });
    for (const auto& server : out.servers) {
      EXPECT_EQ(server.gaps.total(), 360);
      EXPECT_LE(server.gaps.max(), s) << "S = " << s;
      EXPECT_EQ(server.gaps.max(), s) << "S = " << s << ": the fast workers run S clocks ahead of the slow one";
    }
  }
}

// A worker that never shows up: the server and the worker held back by it both fail within the
// timeout, the server naming the silent worker, the worker naming the server it waits for.
TEST(ParameterServer, ASilentWorkerEndsTheRunWithinTheTimeoutNamingIt) {
  PsConfig config = test_config(2, 1, SyncMode::kBsp);
  config.timeout_seconds = 1;
  std::string server_error, worker_error;
  const auto start = std::chrono::steady_clock::now();
  comm::run_local_transports(config.world_size(), [&](comm::Transport& t) {
    if (t.rank() == 1) return;  // never starts
    try {
      if (config.is_server(t.rank())) {
        ParameterServer server(t, config, testing::plain_sgd(1), testing::split_total());
        server.run();
      } else {
        testing::constant_push_worker(t, config, 5, 1);
      }
    } catch (const CommError& e) {
      (t.rank() == 0 ? worker_error : server_error) = e.what();
    }
  });
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_LT(seconds, 10);
  EXPECT_NE(server_error.find("no message for 1 s from worker rank(s) 1 "), std::string::npos) << server_error;
  EXPECT_NE(worker_error.find("rank 2"), std::string::npos) << worker_error;
}

// Worker 0 done while another trains on for longer than the timeout: the servers' keep-alives
// keep worker 0 waiting for their stats instead of timing out.
TEST(ParameterServer, WorkerZeroWaitsForTheStatsLongerThanTheTimeout) {
  PsConfig config = test_config(2, 2, SyncMode::kAsp);
  config.timeout_seconds = 0.6;
  std::vector<ServerStats> reported;
  const auto start = std::chrono::steady_clock::now();
  const PsOutcome out = run_ps(config, testing::plain_sgd(2), testing::split_total(), [&](comm::Transport& t) {
    const int clocks = t.rank() == 0 ? 2 : 10;
    testing::constant_push_worker(
        t, config, clocks, 2,
        [&t](int) {
          if (t.rank() == 1) std::this_thread::sleep_for(std::chrono::milliseconds(200));
        },
        &reported);
  });
  EXPECT_GT(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(), 1.5);
  ASSERT_EQ(reported.size(), 2U);
  EXPECT_EQ(reported[1].worker_pushes, (std::vector<std::int64_t>{2, 10}));
  EXPECT_EQ(reported[0].all_running_gradients + 10, reported[0].gradients)
      << "the all-running window ends with worker 0's done, before any of worker 1's 10 pushes (it sleeps 200 ms "
         "before each)";
}

// Worker 0 pauses (as it does to evaluate at the end of an epoch) for 6x the timeout while BSP
// holds worker 1 at the gate: the servers neither call worker 0 silent nor let worker 1 time out
// (their keep-alives restart its wait), and every push lands once. Without the pause, the same
// silence ends the run (ASilentWorkerEndsTheRunWithinTheTimeoutNamingIt).
TEST(ParameterServer, APausedWorkerIsNotSilentAndHeldWorkersWaitForIt) {
  PsConfig config = test_config(2, 2, SyncMode::kBsp);
  config.timeout_seconds = 0.4;  // workers wait 1.25 x 0.4 + 1 = 1.5 s for an answer
  const auto start = std::chrono::steady_clock::now();
  const PsOutcome out = run_ps(config, testing::plain_sgd(2), testing::split_total(), [&](comm::Transport& t) {
    testing::constant_push_worker(t, config, 4, 2, {}, nullptr, [&t](int c, PsWorker& worker) {
      if (t.rank() != 0 || c != 2) return;
      worker.pause();
      std::this_thread::sleep_for(std::chrono::milliseconds(2500));
    });
  });
  EXPECT_GT(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(), 2.5);
  EXPECT_EQ(out.weights, testing::constant_push_result(2, 4));
}

// Equal workers in ASP: between a worker's read and its next push every other worker pushes
// once, so tau is about W - 1 (TensorFlow's "N - 1 steps on average"). Workers in lockstep would
// push in bursts whose pushes land between each other's push and read; real workers run out of
// step, which a fixed timetable stands in for: worker w pushes clock c at (3c + w) * 2 ms, one
// step of 6 ms for every worker, a third of a step apart, without drifting together.
TEST(ParameterServer, AspMeanTauIsAboutWorkersMinusOne) {
  constexpr int kWorkers = 3, kClocks = 120;
  const PsConfig config = test_config(kWorkers, 1, SyncMode::kAsp);
  const PsOutcome out = run_ps(config, testing::plain_sgd(kWorkers), testing::split_total(), [&](comm::Transport& t) {
    const auto start = std::chrono::steady_clock::now();
    testing::constant_push_worker(t, config, kClocks, kWorkers, [&](int c) {
      std::this_thread::sleep_until(start + std::chrono::milliseconds(2 * (kWorkers * (c + 1) + t.rank())));
    });
  });
  const Histogram& tau = out.servers[0].taus;
  EXPECT_EQ(tau.total(), kClocks * kWorkers);
  EXPECT_GE(tau.mean(), kWorkers - 1.5);
  EXPECT_LE(tau.mean(), kWorkers - 0.5);
  EXPECT_EQ(out.weights, testing::constant_push_result(kWorkers, kClocks));
}

// A worker twice as slow as the others in ASP computes while each of them pushes about twice, so
// its gradients are about 4 updates stale against their 1.5 (W = 3). It makes half as many
// steps, so that all three run for the same time.
TEST(ParameterServer, AspSlowWorkersGradientsAreStaler) {
  const PsConfig config = test_config(3, 1, SyncMode::kAsp);
  const PsOutcome out = run_ps(config, testing::plain_sgd(3), testing::split_total(), [&](comm::Transport& t) {
    const bool slow = t.rank() == 2;
    testing::constant_push_worker(t, config, slow ? 60 : 120, 3, [slow](int) {
      std::this_thread::sleep_for(std::chrono::microseconds(slow ? 6000 : 3000));
    });
  });
  std::vector<float> expected = testing::constant_push_result(3, 0);
  for (float& v : expected) v -= 120 * 1 + 120 * 2 + 60 * 3;  // every push applied once
  EXPECT_EQ(out.weights, expected);
  const auto& taus = out.servers[0].worker_taus;
  const double fast = (taus[0].mean() + taus[1].mean()) / 2;
  EXPECT_GE(taus[2].mean(), 1.5 * fast) << "slow " << taus[2].mean() << ", fast " << fast;
}

}  // namespace
}  // namespace dtrain::ps
