// A transport over a subset of ranks: the even and the odd ranks of 4 allreduce at the same time
// on the same tags without mixing, a subset rank maps to its parent rank, and a silent peer's
// timeout names the parent's rank.
#include "comm/sub_transport.h"

#include <gtest/gtest.h>

#include "comm/communicator.h"
#include "comm/local_transport.h"
#include "core/error.h"

namespace dtrain::comm {
namespace {

TEST(SubTransport, TwoSubsetsAllreduceAtOnceWithoutMixing) {
  run_local_transports(4, [](Transport& t) {
    const int parity = t.rank() % 2;
    SubTransport sub(t, {parity, parity + 2});
    EXPECT_EQ(sub.size(), 2);
    EXPECT_EQ(sub.rank(), t.rank() / 2);
    EXPECT_EQ(sub.parent_rank(1), parity + 2);
    Communicator c(sub);
    std::vector<float> v(1000, static_cast<float>(t.rank() + 1));
    c.allreduce(v.data(), v.size(), DType::kF32, Algorithm::kRing);
    // Ranks 0 and 2 sum 1 + 3; ranks 1 and 3 sum 2 + 4.
    for (float x : v) ASSERT_EQ(x, parity == 0 ? 4.0F : 6.0F);
  });
}

TEST(SubTransport, ASilentPeerIsNamedByItsParentRank) {
  try {
    run_local_transports(3, [](Transport& t) {
      if (t.rank() == 0) return;  // rank 2's subset peer never answers
      if (t.rank() == 1) return;
      SubTransport sub(t, {2, 0});
      int x = 0;
      sub.recv(&x, sizeof x, 1, 5, Deadline::after(0.5), "test receive");
    });
    FAIL() << "a receive from a rank that returned completed";
  } catch (const CommError& e) {
    EXPECT_NE(std::string(e.what()).find("rank 0"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace dtrain::comm
