// Every algorithm against MPI_Allreduce on the same data, under mpirun with any number of ranks:
// f32, f16 and bf16, counts {0, 1, p-1, p+1, 1000, 2^20}; exact on closed-form data, within the
// rounding bound on random data, and bitwise identical on all ranks. Also the MPI transport's
// timeout, test and the agreement check across processes.
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <thread>

#include "comm/agreement.h"
#include "comm/hosts.h"
#include "comm/mpi/mpi_transport.h"
#include "comm_test_util.h"
#include "core/error.h"
#include "core/timer.h"

namespace dtrain::comm {
namespace {

using testing::TypedBuffer;

Communicator& world() {
  static Communicator comm(make_mpi_transport(), testing::test_options());
  return comm;
}

// Every rank's fingerprint of `buf`, compared: results must be bitwise identical everywhere.
void expect_identical_on_all_ranks(const TypedBuffer& buf, const std::string& where) {
  Communicator& comm = world();
  const std::uint64_t mine =
      fnv1a64(std::string_view(reinterpret_cast<const char*>(buf.bytes.data()), buf.bytes.size()));
  std::vector<std::uint64_t> all(static_cast<std::size_t>(comm.size()));
  comm.allgather(&mine, all.data(), sizeof mine);
  for (std::size_t r = 0; r < all.size(); ++r) EXPECT_EQ(all[r], all[0]) << where << ": rank " << r << " differs";
}

class VersusMpi : public ::testing::TestWithParam<std::tuple<Algorithm, DType>> {};

// Across hosts every collective runs in network chunks (comm/hosts.h): a 4 MiB allreduce then
// pipelines 128 messages per block through Open MPI's eager path, and must still equal
// MPI_Allreduce bit for bit. The layout itself is the same on every rank.
TEST(NetworkChunks, AllreduceEqualsMpiAndLayoutAgrees) {
  Communicator& comm = world();
  const HostLayout layout = host_layout(comm);
  ASSERT_EQ(layout.host_of.size(), static_cast<std::size_t>(comm.size()));
  std::vector<int> mine = layout.host_of, first = layout.host_of;
  comm.broadcast(first.data(), first.size() * sizeof(int), 0);
  EXPECT_EQ(mine, first) << "ranks disagree on the host layout";
  Communicator chunked(comm.transport(), testing::test_options(kNetworkChunkBytes));
  const std::size_t count = std::size_t{1} << 20;
  for (Algorithm a : {Algorithm::kRing, Algorithm::kButterfly, Algorithm::kTree}) {
    TypedBuffer ours(DType::kF32, testing::closed_form_data(comm.rank(), count));
    TypedBuffer theirs = ours;
    chunked.allreduce(ours.data(), count, DType::kF32, a);
    comm.allreduce(theirs.data(), count, DType::kF32, Algorithm::kMpi);
    EXPECT_EQ(ours.bytes, theirs.bytes) << algorithm_name(a) << " in 32 KiB chunks differs from MPI_Allreduce";
  }
}

TEST_P(VersusMpi, ClosedFormEqualsMpiAllreduceExactly) {
  const auto [algorithm, dtype] = GetParam();
  Communicator& comm = world();
  const int p = comm.size();
  for (std::size_t count : testing::test_counts(p)) {
    const std::string where = testing::label(algorithm, dtype) + " count " + std::to_string(count);
    TypedBuffer ours(dtype, testing::closed_form_data(comm.rank(), count));
    TypedBuffer theirs = ours;
    comm.allreduce(ours.data(), count, dtype, algorithm);
    comm.allreduce(theirs.data(), count, dtype, Algorithm::kMpi);
    EXPECT_EQ(ours.bytes, theirs.bytes) << where << " differs from MPI_Allreduce on rank " << comm.rank();
    std::size_t bad = 0;
    for (std::size_t i = 0; i < count && bad < 3; ++i) {
      if (ours.get(i) != testing::closed_form_sum(p, i)) {
        ++bad;
        ADD_FAILURE() << where << " element " << i << ": " << ours.get(i) << " != " << testing::closed_form_sum(p, i);
      }
    }
  }
}

TEST_P(VersusMpi, RandomDataAgreesWithMpiAllreduceWithinRounding) {
  const auto [algorithm, dtype] = GetParam();
  Communicator& comm = world();
  const int p = comm.size();
  const double u = dtype == DType::kF32   ? std::ldexp(1.0, -24)
                   : dtype == DType::kF16 ? std::ldexp(1.0, -11)
                                          : std::ldexp(1.0, -8);
  constexpr std::size_t kCount = 100003;
  std::mt19937 gen(77u + static_cast<unsigned>(comm.rank()));
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  std::vector<float> v(kCount);
  for (float& x : v) x = dist(gen);
  TypedBuffer ours(dtype, v), theirs(dtype, v);
  // sum |x| per element, for the bound (p-1) u sum|x| on each result (twice: ours and MPI's).
  std::vector<float> magnitude(kCount);
  for (std::size_t i = 0; i < kCount; ++i) magnitude[i] = std::fabs(ours.get(i));
  comm.allreduce(magnitude.data(), kCount, DType::kF32, Algorithm::kMpi);
  comm.allreduce(ours.data(), kCount, dtype, algorithm);
  comm.allreduce(theirs.data(), kCount, dtype, Algorithm::kMpi);
  for (std::size_t i = 0; i < kCount; ++i) {
    ASSERT_NEAR(ours.get(i), theirs.get(i), 4 * (p - 1) * u * magnitude[i] + 1e-30)
        << testing::label(algorithm, dtype) << " element " << i;
  }
  expect_identical_on_all_ranks(ours, testing::label(algorithm, dtype));
}

INSTANTIATE_TEST_SUITE_P(Mpi, VersusMpi,
                         ::testing::Combine(::testing::Values(Algorithm::kRing, Algorithm::kTree, Algorithm::kButterfly,
                                                              Algorithm::kOneToAll, Algorithm::kShm, Algorithm::kAuto),
                                            ::testing::Values(DType::kF32, DType::kF16, DType::kBF16)),
                         [](const auto& tp) { return testing::label(std::get<0>(tp.param), std::get<1>(tp.param)); });

// allreduce_scaled equals MPI_Allreduce times the scale bit for bit (shm in place in the ranks'
// shared memory, where the ranks are on one host), and a NaN on one rank makes every rank say so.
TEST(MpiScaled, EqualsMpiAllreduceTimesScaleAndAgreesOnNaN) {
  Communicator& comm = world();
  const int p = comm.size();
  constexpr float kScale = 0.5f;
  constexpr std::size_t kCount = std::size_t{1} << 20;
  std::span<std::byte> shared = comm.allocate_shared(kCount * sizeof(float));  // empty across hosts
  std::vector<float> plain(kCount);
  float* data = shared.empty() ? plain.data() : reinterpret_cast<float*>(shared.data());
  for (Algorithm a : {Algorithm::kRing, Algorithm::kShm}) {
    if (a == Algorithm::kShm && !comm.shares_memory()) continue;
    const std::vector<float> v = testing::closed_form_data(comm.rank(), kCount);
    std::copy(v.begin(), v.end(), data);
    std::vector<float> theirs = v;
    EXPECT_TRUE(comm.allreduce_scaled(data, kCount, kScale, a)) << algorithm_name(a);
    comm.allreduce(theirs.data(), kCount, DType::kF32, Algorithm::kMpi);
    for (float& x : theirs) x *= kScale;
    EXPECT_EQ(std::memcmp(data, theirs.data(), kCount * sizeof(float)), 0)
        << algorithm_name(a) << " scaled differs from MPI_Allreduce times " << kScale << " on rank " << comm.rank();
    std::copy(v.begin(), v.end(), data);
    const std::size_t at = kCount - 1 - static_cast<std::size_t>(p / 2);  // in the last rank's block
    if (comm.rank() == 0) data[at] = std::numeric_limits<float>::quiet_NaN();
    EXPECT_FALSE(comm.allreduce_scaled(data, kCount, kScale, a))
        << algorithm_name(a) << ": rank 0's NaN at " << at << " not seen by rank " << comm.rank();
  }
}

TEST(MpiCollectives, BroadcastAllgatherReduceScatterBarrier) {
  Communicator& comm = world();
  const int p = comm.size(), r = comm.rank();
  const auto P = static_cast<std::size_t>(p);
  std::vector<int> b(10000, r == p - 1 ? 42 : 0);
  comm.broadcast(b.data(), b.size() * sizeof(int), p - 1);
  for (int x : b) ASSERT_EQ(x, 42);
  std::vector<int> all(P * 3);
  const int mine[3] = {r, 2 * r, 3 * r};
  comm.allgather(mine, all.data(), sizeof mine);
  for (std::size_t q = 0; q < P; ++q) ASSERT_EQ(all[3 * q + 2], 3 * static_cast<int>(q));
  TypedBuffer rs(DType::kBF16, testing::closed_form_data(r, P * 999));
  comm.reduce_scatter(rs.data(), 999, DType::kBF16);
  for (std::size_t i = 999 * static_cast<std::size_t>(r); i < 999 * static_cast<std::size_t>(r + 1); ++i) {
    ASSERT_EQ(rs.get(i), testing::closed_form_sum(p, i));
  }
  comm.barrier();
}

TEST(MpiTransport, TestCompletesOnlyFinishedRequests) {
  Communicator& comm = world();
  if (comm.size() < 2) GTEST_SKIP() << "needs two ranks";
  testing::expect_test_completes_only_finished_requests(comm.transport());
  comm.barrier();
}

TEST(MpiAgreement, MismatchIsReportedOnEveryRank) {
  Communicator& comm = world();
  if (comm.size() < 2) GTEST_SKIP() << "needs two ranks";
  const std::vector<NamedValue> values = {{"model", "mlp"}, {"batch", comm.rank() == 1 ? "32" : "64"}};
  try {
    check_agreement(comm, values);
    FAIL() << "expected CommError";
  } catch (const CommError& e) {
    EXPECT_NE(std::string(e.what()).find("rank 1 has batch=32"), std::string::npos) << e.what();
  }
  check_agreement(comm, std::vector<NamedValue>{{"model", "mlp"}});  // and agreeing values pass
}

// A rank that does not join: the others fail within the deadline (on a separate communicator,
// which a timeout leaves unusable), and rank 1's ring successor names it.
TEST(MpiTimeout, SilentRankIsNamedWithinTheDeadline) {
  const int p = world().size();
  if (p < 2) GTEST_SKIP() << "needs two ranks";
  CommOptions options = testing::test_options();
  options.timeout_seconds = 1.0;
  Communicator scratch(make_mpi_transport(), options);
  if (scratch.rank() != 1) {
    float x[16] = {};
    const Stopwatch watch;
    try {
      scratch.allreduce(x, 16, DType::kF32, Algorithm::kRing);
      ADD_FAILURE() << "allreduce returned although rank 1 never joined";
    } catch (const CommError& e) {
      if (scratch.rank() == 2 % p) {
        EXPECT_NE(std::string(e.what()).find("waiting for rank 1 "), std::string::npos) << e.what();
      }
    }
    EXPECT_GE(watch.seconds(), 0.9);
    EXPECT_LT(watch.seconds(), 5.0);
  }
  world().barrier();  // rank 1 waits here until the others gave up
}

}  // namespace
}  // namespace dtrain::comm
