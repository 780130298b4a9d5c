// Algorithm names and choice, the reduction's rounding, and the benchmark's table.
#include <gtest/gtest.h>

#include <bit>
#include <limits>

#include "comm/benchmark.h"
#include "comm/local_transport.h"
#include "comm/reduce.h"
#include "core/error.h"

namespace dtrain::comm {
namespace {

TEST(AlgorithmNames, RoundTripAndListValidNames) {
  for (Algorithm a : {Algorithm::kRing, Algorithm::kTree, Algorithm::kButterfly, Algorithm::kOneToAll, Algorithm::kMpi,
                      Algorithm::kShm, Algorithm::kAuto}) {
    EXPECT_EQ(parse_algorithm(algorithm_name(a)), a);
  }
  try {
    (void)parse_algorithm("rabenseifner");
    FAIL() << "expected InputError";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("'rabenseifner'"), std::string::npos);
    EXPECT_NE(std::string(e.what()).find("ring|tree|butterfly|onetoall|mpi|shm|auto"), std::string::npos);
  }
}

TEST(AlgorithmChoice, ButterflyForSmallRingForLarge) {
  EXPECT_EQ(choose_algorithm(8, 1024), Algorithm::kButterfly);
  EXPECT_EQ(choose_algorithm(8, (64 << 10) - 1), Algorithm::kButterfly);
  EXPECT_EQ(choose_algorithm(8, 64 << 10), Algorithm::kRing);
  EXPECT_EQ(choose_algorithm(3, 64 << 20), Algorithm::kRing);
}

TEST(Reduce, SixteenBitSumsRoundOncePerAddition) {
  // bf16 has 8 significant bits: 256 + 1 = 257 is a tie between 256 and 258 -> 256 (even).
  std::uint16_t a = f32_to_bf16(256.0f), b = f32_to_bf16(1.0f);
  reduce_sum(&a, &b, 1, DType::kBF16);
  EXPECT_EQ(bf16_to_f32(a), 256.0f);
  a = f32_to_bf16(256.0f);
  b = f32_to_bf16(3.0f);  // 259 -> 260
  reduce_sum(&a, &b, 1, DType::kBF16);
  EXPECT_EQ(bf16_to_f32(a), 260.0f);
  // f16 has 11: 2048 + 1 -> 2048, 2048 + 3 -> 2052.
  std::uint16_t h = f32_to_f16(2048.0f), one = f32_to_f16(1.0f), three = f32_to_f16(3.0f);
  reduce_sum(&h, &one, 1, DType::kF16);
  EXPECT_EQ(f16_to_f32(h), 2048.0f);
  reduce_sum(&h, &three, 1, DType::kF16);
  EXPECT_EQ(f16_to_f32(h), 2052.0f);
}

// 1500 values (not a multiple of 16, so the vector paths' tails are checked too) that round up,
// tie, overflow to infinity, underflow to subnormals, and NaN; y pairs each special value of x
// with the next one.
struct SixteenBitCases {
  std::vector<float> x, y;
};
SixteenBitCases sixteen_bit_cases() {
  const std::vector<float> special{65504.0f,
                                   65504.0f,
                                   -65504.0f,
                                   3e38f,
                                   3e38f,
                                   6e-8f,
                                   -6e-8f,
                                   1e-40f,
                                   std::numeric_limits<float>::infinity(),
                                   std::numeric_limits<float>::quiet_NaN()};
  SixteenBitCases c{std::vector<float>(1500), std::vector<float>(1500)};
  for (std::size_t i = 0; i < c.x.size(); ++i) {
    c.x[i] = static_cast<float>(i) * 0.37f - 200.0f;
    c.y[i] = 1.0f / static_cast<float>(i + 1);
  }
  for (std::size_t k = 0; k < special.size(); ++k) {
    c.x[7 * k] = special[k];
    c.y[7 * k] = special[(k + 1) % special.size()];
    c.x[1490 + k] = special[k];  // in the tail
    c.y[1490 + k] = special[k];
  }
  return c;
}

TEST(Reduce, LongSixteenBitVectorsAgreeWithElementByElementSums) {
  // The vector paths (16 at a time, the rest blocked) against one rounding per element.
  const auto [xf, yf] = sixteen_bit_cases();
  for (DType dtype : {DType::kF16, DType::kBF16}) {
    SCOPED_TRACE(dtype_name(dtype));
    const bool half = dtype == DType::kF16;
    auto to16 = [half](float f) { return half ? f32_to_f16(f) : f32_to_bf16(f); };
    auto to32 = [half](std::uint16_t h) { return half ? f16_to_f32(h) : bf16_to_f32(h); };
    std::vector<std::uint16_t> x(xf.size()), y(yf.size());
    for (std::size_t i = 0; i < x.size(); ++i) {
      x[i] = to16(xf[i]);
      y[i] = to16(yf[i]);
    }
    auto z = x;
    reduce_sum(z.data(), y.data(), z.size(), dtype);
    for (std::size_t i = 0; i < x.size(); ++i) ASSERT_EQ(z[i], to16(to32(x[i]) + to32(y[i]))) << "element " << i;
  }
}

// A 16-bit wire bucket's two passes (parallel/buckets.h) against one conversion per element:
// the scaled cast rounds the f32 product once; the widening is exact and reports a NaN or Inf
// wherever it lies, in the vector part or the tail.
TEST(Reduce, ScaledCastAndWideningAgreeWithElementByElementConversions) {
  const std::vector<float> xf = sixteen_bit_cases().x;
  for (DType dtype : {DType::kF16, DType::kBF16}) {
    SCOPED_TRACE(dtype_name(dtype));
    const bool half = dtype == DType::kF16;
    auto to16 = [half](float f) { return half ? f32_to_f16(f) : f32_to_bf16(f); };
    auto to32 = [half](std::uint16_t h) { return half ? f16_to_f32(h) : bf16_to_f32(h); };
    for (const float scale : {0.5f, 0.3f}) {
      std::vector<std::uint16_t> wire(xf.size());
      scaled_to_16bit(dtype, xf.data(), wire.data(), xf.size(), scale);
      for (std::size_t i = 0; i < xf.size(); ++i) ASSERT_EQ(wire[i], to16(scale * xf[i])) << "element " << i;
      std::vector<float> back(wire.size());
      EXPECT_FALSE(widen_all_finite(dtype, wire.data(), back.data(), wire.size()));
      for (std::size_t i = 0; i < wire.size(); ++i) {
        ASSERT_EQ(std::bit_cast<std::uint32_t>(back[i]), std::bit_cast<std::uint32_t>(to32(wire[i]))) << i;
      }
    }
    // Finite everywhere, then one NaN in the vector part, then one in the tail.
    std::vector<std::uint16_t> finite(1500, to16(1.5f));
    std::vector<float> back(finite.size());
    EXPECT_TRUE(widen_all_finite(dtype, finite.data(), back.data(), finite.size()));
    for (const std::size_t at : {std::size_t{33}, std::size_t{1499}}) {
      std::vector<std::uint16_t> one_bad = finite;
      one_bad[at] = to16(std::numeric_limits<float>::quiet_NaN());
      EXPECT_FALSE(widen_all_finite(dtype, one_bad.data(), back.data(), one_bad.size())) << at;
    }
  }
}

TEST(Benchmark, ReturnsOneRowPerSizeAndAlgorithmWithBusbw) {
  std::vector<std::vector<BenchRow>> tables(3);
  run_local(3, [&](Communicator& comm) {
    BenchOptions options;
    options.min_bytes = 1024;
    options.max_bytes = 16384;
    options.iterations = 3;
    options.warmup = 1;
    options.out = nullptr;
    tables[static_cast<std::size_t>(comm.rank())] = benchmark_allreduce(comm, options);
  });
  const auto& rows = tables[0];
  ASSERT_EQ(rows.size(), 3u * 5u);  // sizes 1, 4, 16 KiB x ring, tree, butterfly, onetoall, shm (no mpi)
  for (const BenchRow& row : rows) {
    EXPECT_NE(row.algorithm, Algorithm::kMpi);
    EXPECT_GT(row.seconds, 0);
    EXPECT_NEAR(row.algbw_gbps, row.bytes / row.seconds / 1e9, 1e-9);
    EXPECT_NEAR(row.busbw_gbps, row.algbw_gbps * 4.0 / 3.0, 1e-9);
  }
  EXPECT_EQ(rows.front().bytes, 1024u);
  EXPECT_EQ(rows.back().bytes, 16384u);
  for (std::size_t r = 1; r < 3; ++r) {
    ASSERT_EQ(tables[r].size(), rows.size());
    for (std::size_t i = 0; i < rows.size(); ++i) EXPECT_EQ(tables[r][i].seconds, rows[i].seconds);
  }
}

}  // namespace
}  // namespace dtrain::comm
