// Pinning the same-host pairs while the calibration times their link: which CPU each pair takes,
// when it pins at all, and that the thread's CPUs come back afterwards (allowed_cpus reads the
// calling thread's mask).
#include "calibration/pinned_pairs.h"

#include <gtest/gtest.h>

#include <numeric>
#include <vector>

#include "core/core_round_trip.h"

namespace dtrain::perf {
namespace {

TEST(PinnedPairs, PairJTakesTheJthAllowedCpuOnlyWhereRanksOutnumberThem) {
  const std::vector<int> two{0, 1};
  EXPECT_EQ(pair_cpu(4, 0, two), 0);
  EXPECT_EQ(pair_cpu(4, 1, two), 1);
  EXPECT_EQ(pair_cpu(8, 2, two), 0);  // two pairs a CPU, round robin
  EXPECT_EQ(pair_cpu(8, 3, two), 1);
  EXPECT_EQ(pair_cpu(3, 0, std::vector<int>{2, 5}), 2);  // the allowed CPUs, not 0..n-1
  EXPECT_EQ(pair_cpu(6, 1, std::vector<int>{2, 5}), 5);
  // As many CPUs as ranks (or more): the kernel gives each rank its own; nothing to pin.
  EXPECT_EQ(pair_cpu(2, 0, two), -1);
  EXPECT_EQ(pair_cpu(4, 0, std::vector<int>{0, 1, 2, 3}), -1);
  // One CPU: every rank shares it whatever is pinned.
  EXPECT_EQ(pair_cpu(4, 0, std::vector<int>{3}), -1);
  EXPECT_EQ(pair_cpu(4, 0, {}), -1);
}

TEST(PinnedPairs, PinsTheCallingThreadForItsScopeAndRestoresItsCpus) {
  const std::vector<int> allowed = allowed_cpus();
  if (allowed.size() < 2) GTEST_SKIP() << "needs two CPUs to choose between";
  const std::vector<int> before = allowed_cpus();
  // One host with two ranks per allowed CPU, so that they outnumber them on any machine.
  std::vector<int> host(2 * allowed.size());
  std::iota(host.begin(), host.end(), 0);
  {
    const PinnedPairs pin({host}, 3);  // rank 3: pair 1
    ASSERT_TRUE(pin.pinned());
    EXPECT_EQ(pin.cpu(), allowed[1]);
    EXPECT_EQ(allowed_cpus(), std::vector<int>{allowed[1]});
  }
  EXPECT_EQ(allowed_cpus(), before);
  // Fewer ranks than CPUs, a rank of no host listed, the odd one out: not pinned.
  {
    const PinnedPairs pin({{0, 1}}, 0);
    EXPECT_FALSE(pin.pinned());
  }
  {
    const PinnedPairs pin({host}, static_cast<int>(host.size()));
    EXPECT_FALSE(pin.pinned());
  }
  std::vector<int> odd(2 * allowed.size() + 1);
  std::iota(odd.begin(), odd.end(), 0);
  {
    const PinnedPairs pin({odd}, static_cast<int>(odd.size()) - 1);
    EXPECT_FALSE(pin.pinned());
    EXPECT_EQ(pin.cpu(), -1);
  }
  EXPECT_EQ(allowed_cpus(), before);
}

}  // namespace
}  // namespace dtrain::perf
