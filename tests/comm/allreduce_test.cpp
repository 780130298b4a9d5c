// Allreduce on the local backend: every algorithm, world sizes 1..9, counts {0, 1, p-1, p+1,
// 1000, 2^20}, f32/f16/bf16, exact against closed-form sums; random data against a double
// reference within the rounding bound; results bitwise identical on all ranks.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <mutex>
#include <random>
#include <span>
#include <tuple>

#include "comm/local_transport.h"
#include "comm_test_util.h"
#include "core/error.h"
#include "tensor/allocator.h"

namespace dtrain::comm {
namespace {

using testing::TypedBuffer;

class AllreduceExact : public ::testing::TestWithParam<std::tuple<Algorithm, DType>> {};

// Runs allreduce on closed-form data for every count and checks every element on every rank.
void check_closed_form(int p, Algorithm algorithm, DType dtype, const CommOptions& options,
                       const std::vector<std::size_t>& counts) {
  run_local(
      p,
      [&](Communicator& comm) {
        for (std::size_t count : counts) {
          TypedBuffer buf(dtype, testing::closed_form_data(comm.rank(), count));
          comm.allreduce(buf.data(), count, dtype, algorithm);
          std::size_t bad = 0;
          for (std::size_t i = 0; i < count; ++i) {
            if (buf.get(i) != testing::closed_form_sum(p, i) && bad++ < 3) {
              ADD_FAILURE() << algorithm_name(algorithm) << " " << dtype_name(dtype) << " p=" << p << " rank "
                            << comm.rank() << " count " << count << " element " << i << ": got " << buf.get(i)
                            << ", want " << testing::closed_form_sum(p, i);
            }
          }
        }
      },
      options);
}

TEST_P(AllreduceExact, ClosedFormAllWorldSizesAndCounts) {
  const auto [algorithm, dtype] = GetParam();
  for (int p = 1; p <= 9; ++p) {
    SCOPED_TRACE("p=" + std::to_string(p));
    check_closed_form(p, algorithm, dtype, testing::test_options(), testing::test_counts(p));
  }
}

// Chunks of 100 bytes (25 f32 / 50 f16 elements, not a divisor of the blocks) push many
// pipelined messages through every step, including partial last chunks.
TEST_P(AllreduceExact, ClosedFormSmallChunks) {
  const auto [algorithm, dtype] = GetParam();
  const CommOptions options = testing::test_options(100);
  for (int p : {2, 3, 5, 8, 9}) {
    SCOPED_TRACE("p=" + std::to_string(p));
    check_closed_form(p, algorithm, dtype, options, {static_cast<std::size_t>(p + 1), 1000, 4097});
  }
}

TEST_P(AllreduceExact, RandomDataWithinRoundingBoundAndIdenticalOnAllRanks) {
  // Named, not structured bindings: a lambda below captures them.
  const Algorithm algorithm = std::get<0>(GetParam());
  const DType dtype = std::get<1>(GetParam());
  // Unit roundoff of one addition: f32 2^-24, f16 2^-11, bf16 2^-8. Each of the p-1 additions
  // rounds a partial sum bounded by sum |x|, so |error| <= (p-1) u sum|x| (plus f32's rounding
  // on the way, absorbed by the factor 2).
  const double u = dtype == DType::kF32   ? std::ldexp(1.0, -24)
                   : dtype == DType::kF16 ? std::ldexp(1.0, -11)
                                          : std::ldexp(1.0, -8);
  // 317 elements take the butterfly's recursive-doubling path, 5003 its halving path.
  for (int p : {2, 3, 4, 7, 9}) {
    for (std::size_t kCount : {std::size_t{317}, std::size_t{5003}}) {
      std::vector<TypedBuffer> inputs, outputs;
      for (int r = 0; r < p; ++r) {
        std::mt19937 gen(1234u + static_cast<unsigned>(r));
        std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
        std::vector<float> v(kCount);
        for (float& x : v) x = dist(gen);
        inputs.emplace_back(dtype, v);
      }
      outputs = inputs;
      run_local(
          p,
          [&](Communicator& comm) {
            comm.allreduce(outputs[static_cast<std::size_t>(comm.rank())].data(), kCount, dtype, algorithm);
          },
          testing::test_options());
      for (std::size_t i = 0; i < kCount; ++i) {
        double exact = 0, magnitude = 0;
        for (const TypedBuffer& in : inputs) {
          exact += in.get(i);
          magnitude += std::fabs(in.get(i));
        }
        const double tol = 2 * (p - 1) * u * magnitude + 1e-30;
        ASSERT_NEAR(outputs[0].get(i), exact, tol) << "p=" << p << " element " << i;
        for (int r = 1; r < p; ++r) {
          ASSERT_EQ(outputs[static_cast<std::size_t>(r)].bytes, outputs[0].bytes)
              << "rank " << r << " differs from rank 0, p=" << p;
        }
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Comm, AllreduceExact,
                         ::testing::Combine(::testing::Values(Algorithm::kRing, Algorithm::kTree, Algorithm::kButterfly,
                                                              Algorithm::kOneToAll, Algorithm::kShm, Algorithm::kAuto),
                                            ::testing::Values(DType::kF32, DType::kF16, DType::kBF16)),
                         [](const auto& tp) { return testing::label(std::get<0>(tp.param), std::get<1>(tp.param)); });

TEST(Allreduce, MpiAlgorithmNeedsMpiTransport) {
  run_local(
      2,
      [](Communicator& comm) {
        float x = 1;
        try {
          comm.allreduce(&x, 1, DType::kF32, Algorithm::kMpi);
          FAIL() << "expected InputError";
        } catch (const InputError& e) {
          EXPECT_NE(std::string(e.what()).find("'local'"), std::string::npos) << e.what();
        }
      },
      testing::test_options());
}

// Buffers in memory from allocate_shared are reduced in place by the peers (no staging copy); a
// rank whose buffer lies elsewhere is staged, whatever the others do.
TEST(Allreduce, ShmInSharedMemoryAndMixedWithPlainBuffers) {
  for (int p : {1, 2, 3, 4, 7}) {
    for (int plain_rank : {-1, 0, p - 1}) {
      run_local(
          p,
          [&](Communicator& comm) {
            ASSERT_TRUE(comm.shares_memory());
            for (std::size_t count : testing::test_counts(p)) {
              const TypedBuffer expected(DType::kF32, testing::closed_form_data(comm.rank(), count));
              std::span<std::byte> shared = comm.allocate_shared(expected.bytes.size() + 64);
              ASSERT_EQ(shared.size(), expected.bytes.size() + 64);
              std::byte* data = shared.data() + 64;  // not at the region's start
              std::vector<std::byte> plain(expected.bytes.size());
              if (comm.rank() == plain_rank) data = plain.data();
              if (count > 0) std::memcpy(data, expected.bytes.data(), expected.bytes.size());
              comm.allreduce(data, count, DType::kF32, Algorithm::kShm);
              const auto* got = reinterpret_cast<const float*>(data);
              for (std::size_t i = 0; i < count; ++i) {
                ASSERT_EQ(got[i], testing::closed_form_sum(p, i))
                    << "p=" << p << " plain rank " << plain_rank << " count " << count << " element " << i;
              }
            }
          },
          testing::test_options());
    }
  }
}

// allreduce_scaled: every rank gets the sum times the scale (shm scales inside its reduction, in
// place in shared memory or staged from a plain buffer), and one NaN or Inf anywhere on any rank
// makes it return false on every rank (shm: each rank checks only the block it sums).
TEST(Allreduce, ScaledSumAndOneFiniteVerdictOnEveryRank) {
  constexpr float kScale = 0.25f;  // a power of two: the closed-form sums times it stay exact
  for (Algorithm a : {Algorithm::kRing, Algorithm::kTree, Algorithm::kButterfly, Algorithm::kOneToAll, Algorithm::kShm,
                      Algorithm::kAuto}) {
    for (int p : {1, 2, 3, 4}) {
      run_local(
          p,
          [&](Communicator& comm) {
            const std::vector<std::size_t> counts = testing::test_counts(p);
            const std::size_t most = *std::max_element(counts.begin(), counts.end());
            std::span<std::byte> shared = comm.allocate_shared(most * sizeof(float));
            std::vector<float> plain(most);
            // Rank 1 passes a plain buffer: shm stages it.
            float* data = comm.rank() == 1 ? plain.data() : reinterpret_cast<float*>(shared.data());
            const auto fill = [&](std::size_t count) {
              const std::vector<float> v = testing::closed_form_data(comm.rank(), count);
              std::copy(v.begin(), v.end(), data);
            };
            for (std::size_t count : counts) {
              fill(count);
              EXPECT_TRUE(comm.allreduce_scaled(data, count, kScale, a)) << algorithm_name(a) << " count " << count;
              for (std::size_t i = 0; i < count; ++i) {
                ASSERT_EQ(data[i], testing::closed_form_sum(p, i) * kScale)
                    << algorithm_name(a) << " p=" << p << " count " << count << " element " << i;
              }
              if (count == 0) continue;
              const float inf = std::numeric_limits<float>::infinity();
              for (const float poison : {std::numeric_limits<float>::quiet_NaN(), inf, -inf}) {
                for (const std::size_t at : {std::size_t{0}, count / 2, count - 1}) {
                  const int who = static_cast<int>(at % static_cast<std::size_t>(p));
                  fill(count);
                  if (comm.rank() == who) data[at] = poison;
                  EXPECT_FALSE(comm.allreduce_scaled(data, count, kScale, a))
                      << algorithm_name(a) << " p=" << p << " count " << count << ": " << poison << " at " << at
                      << " on rank " << who << ", seen by rank " << comm.rank();
                }
              }
            }
          },
          testing::test_options());
    }
  }
}

TEST(Allreduce, RejectsNonFloatDtypes) {
  run_local(
      1,
      [](Communicator& comm) {
        std::int32_t x = 1;
        EXPECT_THROW(comm.allreduce(&x, 1, DType::kI32), InputError);
      },
      testing::test_options());
}

TEST(Allreduce, RepeatedCallsAllocateNothing) {
  // After the first call of a size, scratch memory is reused: later calls of that size or smaller
  // make no allocator calls at all (every rank's scratch comes from the caching allocator).
  run_local(
      3,
      [](Communicator& comm) {
        TypedBuffer buf(DType::kF32, testing::closed_form_data(comm.rank(), 100000));
        for (Algorithm a : {Algorithm::kRing, Algorithm::kTree, Algorithm::kButterfly, Algorithm::kOneToAll}) {
          comm.allreduce(buf.data(), buf.count(), DType::kF32, a);
        }
        comm.barrier();
        const AllocatorStats before = cpu_allocator_stats();
        comm.barrier();
        for (Algorithm a : {Algorithm::kRing, Algorithm::kTree, Algorithm::kButterfly, Algorithm::kOneToAll}) {
          comm.allreduce(buf.data(), buf.count(), DType::kF32, a);
          comm.allreduce(buf.data(), 5000, DType::kF16, a);
        }
        comm.barrier();
        const AllocatorStats after = cpu_allocator_stats();
        EXPECT_EQ(after.system_allocations + after.cache_hits, before.system_allocations + before.cache_hits);
      },
      testing::test_options());
}

}  // namespace
}  // namespace dtrain::comm
