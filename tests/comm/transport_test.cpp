// The local transport's point-to-point semantics, timeouts and failure propagation.
#include <gtest/gtest.h>

#include <atomic>
#include <thread>

#include "comm/local_transport.h"
#include "comm_test_util.h"
#include "core/error.h"
#include "core/timer.h"

namespace dtrain::comm {
namespace {

// A fresh deadline per use: one taken at start-up would expire in slow (sanitizer) runs.
Deadline soon() { return Deadline::after(30); }

TEST(LocalTransport, SameTagMessagesArriveInOrderAndTagsDoNotMix) {
  run_local_transports(2, [](Transport& t) {
    if (t.rank() == 0) {
      int a = 1, b = 2, c = 3;
      Request r[3] = {t.isend(&a, 4, 1, 7), t.isend(&b, 4, 1, 7), t.isend(&c, 4, 1, 9)};
      t.waitall(r, soon(), "test");
    } else {
      int x = 0, y = 0, z = 0;
      // Post the tag-9 receive first: it must match the tag-9 send, not the first one.
      Request r[3] = {t.irecv(&z, 4, 0, 9), t.irecv(&x, 4, 0, 7), t.irecv(&y, 4, 0, 7)};
      t.waitall(r, soon(), "test");
      EXPECT_EQ(x, 1);
      EXPECT_EQ(y, 2);
      EXPECT_EQ(z, 3);
    }
  });
}

TEST(LocalTransport, TestCompletesOnlyFinishedRequests) {
  run_local_transports(3, [](Transport& t) { testing::expect_test_completes_only_finished_requests(t); });
}

// Rank 0 sends 8 bytes, rank 1 receives them (by `receive`) into a 4-byte buffer: both ranks must
// throw a CommError naming the size mismatch.
template <typename Receive>
void expect_size_mismatch_on_both_sides(Receive receive) {
  std::atomic<int> errors{0};
  run_local_transports(2, [&](Transport& t) {
    char buf[8] = {};
    try {
      if (t.rank() == 0) {
        t.send(buf, 8, 1, 0, soon(), "test");
      } else {
        receive(t, buf);
      }
    } catch (const CommError& e) {
      EXPECT_NE(std::string(e.what()).find("size mismatch"), std::string::npos) << e.what();
      ++errors;
    }
  });
  EXPECT_EQ(errors.load(), 2);
}

TEST(LocalTransport, TestReportsAFailedRequest) {
  expect_size_mismatch_on_both_sides([](Transport& t, char* buf) {
    Request r = t.irecv(buf, 4, 0, 0);
    while (!t.test(r, "test recv")) std::this_thread::yield();
  });
}

TEST(LocalTransport, SizeMismatchIsCommErrorOnBothSides) {
  expect_size_mismatch_on_both_sides([](Transport& t, char* buf) { t.recv(buf, 4, 0, 0, soon(), "test"); });
}

TEST(LocalTransport, BadPeerIsCommError) {
  run_local_transports(2, [](Transport& t) {
    char c = 0;
    EXPECT_THROW(t.isend(&c, 1, 2, 0), CommError);
    EXPECT_THROW(t.irecv(&c, 1, -1, 0), CommError);
    EXPECT_THROW(t.isend(&c, 1, 0, 40000), CommError);
  });
}

TEST(LocalTransport, RethrowsTheFirstExceptionAndAbortsTheOthers) {
  try {
    run_local_transports(3, [](Transport& t) {
      if (t.rank() == 2) throw DataError("rank two broke");
      char c;
      t.recv(&c, 1, 2, 0, Deadline::never(), "test");  // would wait forever without the abort
    });
    FAIL() << "expected DataError";
  } catch (const DataError& e) {
    EXPECT_STREQ(e.what(), "rank two broke");
  }
}

TEST(LocalTransport, AbortedWaitNamesTheFailedRank) {
  std::atomic<int> named{0};
  EXPECT_THROW(run_local_transports(2,
                                    [&](Transport& t) {
                                      if (t.rank() == 1) throw DataError("disk full");
                                      char c;
                                      try {
                                        t.recv(&c, 1, 1, 0, Deadline::never(), "test recv");
                                      } catch (const CommError& e) {
                                        const std::string what = e.what();
                                        if (what.find("rank 1 failed: disk full") != std::string::npos) ++named;
                                        throw;
                                      }
                                    }),
               DataError);
  EXPECT_EQ(named.load(), 1);
}

// A rank that never enters the collective: the others fail within the deadline, and its ring
// neighbour names it.
void check_timeout(int p, Algorithm algorithm) {
  constexpr double kTimeout = 0.3;
  constexpr int kStuck = 1;
  std::atomic<int> finished{0};
  std::atomic<bool> neighbour_named_it{false};
  CommOptions options;
  options.timeout_seconds = kTimeout;
  run_local(
      p,
      [&](Communicator& comm) {
        // shm finds out whether memory is shared on its first call: done by all, so the stuck rank
        // misses only the allreduce.
        if (algorithm == Algorithm::kShm) {
          ASSERT_TRUE(comm.shares_memory());
        }
        if (comm.rank() == kStuck) {
          while (finished.load() < p - 1) std::this_thread::sleep_for(std::chrono::milliseconds(1));
          return;
        }
        std::vector<float> data(1000, 1.0f);
        const Stopwatch watch;
        try {
          comm.allreduce(data.data(), data.size(), DType::kF32, algorithm);
          ADD_FAILURE() << "rank " << comm.rank() << ": allreduce returned although rank 1 never joined";
        } catch (const CommError& e) {
          const std::string what = e.what();
          EXPECT_NE(what.find("timed out after 0.3 s"), std::string::npos) << what;
          EXPECT_NE(what.find(std::string("allreduce(") + std::string(algorithm_name(algorithm))), std::string::npos)
              << what;
          if (what.find("waiting for rank 1 ") != std::string::npos) neighbour_named_it = true;
        }
        EXPECT_GE(watch.seconds(), kTimeout * 0.9);
        EXPECT_LT(watch.seconds(), kTimeout + 2.0) << "rank " << comm.rank() << " hung past its deadline";
        ++finished;
      },
      options);
  EXPECT_TRUE(neighbour_named_it.load());
}

TEST(Timeout, DeadRankIsNamedWithinTheDeadline) {
  check_timeout(2, Algorithm::kRing);
  check_timeout(4, Algorithm::kRing);
  check_timeout(3, Algorithm::kTree);
  check_timeout(5, Algorithm::kButterfly);
  check_timeout(3, Algorithm::kOneToAll);
  check_timeout(2, Algorithm::kShm);
  check_timeout(4, Algorithm::kShm);
}

TEST(Timeout, ZeroMeansNoDeadline) {
  EXPECT_TRUE(Deadline::after(0).is_never());
  EXPECT_FALSE(Deadline::after(0).expired());
  EXPECT_FALSE(Deadline::after(5).is_never());
}

}  // namespace
}  // namespace dtrain::comm
