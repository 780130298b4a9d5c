// The gate of BSP, SSP and ASP as pure logic, with jbosen's SSP clock-table test: workers move
// in a random order, every read's lower bound (each other worker's clock >= c - S) is asserted,
// and the table is exact at the end.
#include "ps/clock_gate.h"

#include <gtest/gtest.h>

#include <random>

#include "core/error.h"

namespace dtrain::ps {
namespace {

TEST(Histogram, CountsMaxAndMean) {
  Histogram h;
  EXPECT_EQ(h.max(), -1);
  EXPECT_EQ(h.mean(), 0.0);
  for (std::int64_t v : {0, 2, 2, 4}) h.add(v);
  EXPECT_EQ(h.total(), 4);
  EXPECT_EQ(h.max(), 4);
  EXPECT_DOUBLE_EQ(h.mean(), 2.0);
  EXPECT_EQ(h.counts(), (std::vector<std::int64_t>{1, 0, 2, 0, 1}));
  Histogram other;
  other.add(6);
  h.merge(other);
  EXPECT_EQ(h.max(), 6);
  EXPECT_EQ(h.total(), 5);
}

TEST(ClockGate, BspOpensClockCOnlyWhenEveryWorkerPushedC) {
  ClockGate g(3, 0);
  EXPECT_TRUE(g.may_read(0, 0));
  g.advance(0);
  EXPECT_FALSE(g.may_read(0, 1)) << "workers 1 and 2 have not pushed clock 0";
  g.advance(1);
  EXPECT_FALSE(g.may_read(0, 1));
  g.advance(2);
  EXPECT_TRUE(g.may_read(0, 1));
  EXPECT_FALSE(g.may_read(0, 2)) << "read-my-writes: its own clock-1 push is not in";
}

TEST(ClockGate, SspLetsAWorkerRunAtMostSClocksAhead) {
  ClockGate g(2, 2);
  for (int i = 0; i < 3; ++i) g.advance(0);  // worker 0 pushed clocks 0, 1, 2
  EXPECT_TRUE(g.may_read(0, 2)) << "min clock 0 >= 2 - 2";
  EXPECT_FALSE(g.may_read(0, 3)) << "min clock 0 < 3 - 2";
  g.advance(1);
  EXPECT_TRUE(g.may_read(0, 3));
  g.record_read(0, 3, 4);
  g.record_apply(0, 3, 6);
  EXPECT_EQ(g.gaps().max(), 2) << "read clock 3 while worker 1 had pushed only clock 0";
  EXPECT_EQ(g.taus().max(), 2) << "two updates between the read and the apply";
}

TEST(ClockGate, AspOnlyWaitsForTheReadersOwnPushes) {
  ClockGate g(2, ClockGate::kUnbounded);
  for (int i = 0; i < 50; ++i) g.advance(0);
  EXPECT_TRUE(g.may_read(0, 50));
  EXPECT_FALSE(g.may_read(0, 51));
  EXPECT_FALSE(g.may_read(1, 1));
}

TEST(ClockGate, AFinishedWorkerHoldsNobodyBack) {
  ClockGate g(2, 0);
  g.advance(0);
  EXPECT_FALSE(g.may_read(0, 1));
  g.finish(1);
  EXPECT_TRUE(g.may_read(0, 1));
  EXPECT_THROW(g.advance(1), InternalError);
  EXPECT_THROW(g.record_read(0, 2, 0), InternalError) << "a read through a closed gate is a bug";
}

// jbosen's SSPDemo: a table with one column per worker; at iteration `iter` a worker reads every
// column and each must be >= iter - S, then it increments its own column and clocks. Here the
// columns are the gate's clocks, the order of the workers' moves is random (a worker the gate
// holds back retries later) and a slow worker moves less often.
void clock_table(int workers, std::int64_t s, std::uint32_t seed, std::int64_t iterations) {
  ClockGate g(workers, s);
  std::vector<std::int64_t> iter(static_cast<std::size_t>(workers), 0);
  std::mt19937 rng(seed);
  std::int64_t version = 0, blocked = 0;
  while (true) {
    bool all_done = true;
    for (std::int64_t i : iter) all_done = all_done && i == iterations;
    if (all_done) break;
    // Worker 0 is picked a third as often as the others: a persistent straggler.
    int w = static_cast<int>(rng() % static_cast<std::uint32_t>(3 * workers - 2));
    w = w < 1 ? 0 : 1 + (w - 1) % (workers - 1);
    auto& it = iter[static_cast<std::size_t>(w)];
    if (it == iterations) continue;
    if (!g.may_read(w, it)) {
      ++blocked;
      continue;
    }
    for (int other = 0; other < workers; ++other) {
      if (!g.finished(other)) {
        ASSERT_GE(g.clock(other), it - s) << "worker " << w << " read clock " << it;
      }
    }
    g.record_read(w, it, version);
    g.record_apply(w, it, version);
    g.advance(w);
    ++version;
    if (++it == iterations) g.finish(w);
  }
  for (int w = 0; w < workers; ++w) EXPECT_EQ(g.clock(w), iterations) << "every push counted once";
  EXPECT_EQ(g.gaps().total(), workers * iterations);
  EXPECT_LE(g.gaps().max(), s);
  EXPECT_EQ(g.gaps().max(), s) << "a straggler makes the others reach the bound";
  EXPECT_GT(blocked, 0) << "the gate held the fast workers back";
}

TEST(ClockGate, SspClockTable) {
  for (std::int64_t s : {0, 1, 3}) {
    for (std::uint32_t seed : {1u, 2u, 3u}) {
      SCOPED_TRACE(::testing::Message() << "S " << s << ", seed " << seed);
      clock_table(4, s, seed, 200);
    }
  }
}

}  // namespace
}  // namespace dtrain::ps
