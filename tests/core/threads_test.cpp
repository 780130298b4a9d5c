#include "core/threads.h"

#include <gtest/gtest.h>
#include <sched.h>

#include <thread>

namespace dtrain {
namespace {

int host_cpus() { return static_cast<int>(std::max(1u, std::thread::hardware_concurrency())); }

TEST(DefaultThreads, UnboundProcessSharesTheHostAmongItsRanks) {
  if (available_cpus() < host_cpus()) GTEST_SKIP() << "this test process is bound to a subset of the CPUs";
  EXPECT_EQ(default_threads(1), host_cpus());
  EXPECT_EQ(default_threads(2), std::max(1, host_cpus() / 2));
  EXPECT_EQ(default_threads(host_cpus()), 1);
  EXPECT_EQ(default_threads(4 * host_cpus()), 1);  // oversubscribed: one each, never zero
  EXPECT_EQ(default_threads(0), host_cpus());      // a count below one counts as one
}

TEST(DefaultThreads, BoundProcessKeepsItsOwnCpus) {
  cpu_set_t saved;
  ASSERT_EQ(sched_getaffinity(0, sizeof saved, &saved), 0);
  if (CPU_COUNT(&saved) < 2) GTEST_SKIP() << "needs two CPUs to bind to one";
  cpu_set_t one;
  CPU_ZERO(&one);
  for (int c = 0; c < CPU_SETSIZE; ++c) {
    if (CPU_ISSET(c, &saved)) {
      CPU_SET(c, &one);
      break;
    }
  }
  ASSERT_EQ(sched_setaffinity(0, sizeof one, &one), 0);
  const int bound = available_cpus();
  const int threads = default_threads(2);
  ASSERT_EQ(sched_setaffinity(0, sizeof saved, &saved), 0);
  EXPECT_EQ(bound, 1);
  EXPECT_EQ(threads, 1);  // the launcher's binding is this rank's share already
}

}  // namespace
}  // namespace dtrain
