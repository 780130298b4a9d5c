// Start-up agreement check: same values pass; differing, missing or longer values fail on every
// rank with the same message naming the ranks and values.
#include "comm/agreement.h"

#include <gtest/gtest.h>

#include <mutex>

#include "comm/local_transport.h"
#include "comm_test_util.h"
#include "core/error.h"

namespace dtrain::comm {
namespace {

// Runs check_agreement with values_of(rank) and returns each rank's error message ("" if none).
std::vector<std::string> run_check(int p, const std::function<std::vector<NamedValue>(int)>& values_of) {
  std::vector<std::string> messages(static_cast<std::size_t>(p));
  run_local(
      p,
      [&](Communicator& comm) {
        const auto values = values_of(comm.rank());
        try {
          check_agreement(comm, values);
        } catch (const CommError& e) {
          messages[static_cast<std::size_t>(comm.rank())] = e.what();
        }
      },
      testing::test_options());
  return messages;
}

std::vector<NamedValue> config(const std::string& batch) {
  return {{"model", "resnet20"}, {"algorithm", "ring"}, {"dtype", "f32"}, {"batch", batch}, {"shapes", "9a3f"}};
}

TEST(Agreement, IdenticalValuesPass) {
  for (int p : {1, 2, 5}) {
    for (const auto& m : run_check(p, [](int) { return config("64"); })) EXPECT_EQ(m, "");
  }
}

TEST(Agreement, MismatchNamesRanksAndValuesOnEveryRank) {
  const auto messages = run_check(2, [](int r) { return config(r == 0 ? "64" : "32"); });
  for (const auto& m : messages) {
    EXPECT_EQ(m, messages[0]);
    EXPECT_NE(m.find("rank 0 has batch=64"), std::string::npos) << m;
    EXPECT_NE(m.find("rank 1 has batch=32"), std::string::npos) << m;
    EXPECT_EQ(m.find("model"), std::string::npos) << "agreeing values are not reported: " << m;
  }
}

TEST(Agreement, GroupsRanksAndReportsMissingAndLongerValues) {
  const auto messages = run_check(5, [](int r) {
    auto v = config("64");
    if (r == 3) v[2].value = "bf16-with-a-much-longer-value-than-the-others-have";
    if (r == 4) v.pop_back();  // no "shapes"
    return v;
  });
  for (const auto& m : messages) {
    EXPECT_EQ(m, messages[0]);
    EXPECT_NE(m.find("ranks 0-2,4 have dtype=f32, rank 3 has dtype=bf16-with-a-much-longer"), std::string::npos) << m;
    EXPECT_NE(m.find("ranks 0-3 have shapes=9a3f, rank 4 has no 'shapes'"), std::string::npos) << m;
  }
}

TEST(Agreement, SameValuesInADifferentOrderFail) {
  const auto messages = run_check(2, [](int r) {
    auto v = config("64");
    if (r == 1) std::swap(v[0], v[1]);
    return v;
  });
  for (const auto& m : messages) EXPECT_NE(m.find("different order"), std::string::npos) << m;
}

TEST(Agreement, BracedListOfValues) {
  run_local(
      2,
      [](Communicator& comm) {
        check_agreement(comm, {{"model", "mlp"}, {"batch", "64"}});
      },
      testing::test_options());
}

TEST(Agreement, FingerprintHashIsStable) {
  EXPECT_EQ(fnv1a64(""), 0xcbf29ce484222325ull);
  EXPECT_EQ(fnv1a64("a"), 0xaf63dc4c8601ec8cull);
}

}  // namespace
}  // namespace dtrain::comm
