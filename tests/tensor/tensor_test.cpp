#include <gtest/gtest.h>

#include <bit>
#include <cstdint>
#include <vector>

#include "tensor/backend.h"
#include "tensor/tensor.h"

namespace dtrain {
namespace {

TEST(Tensor, ZerosAndFill) {
  Tensor t = Tensor::zeros({2, 3});
  EXPECT_EQ(t.numel(), 6);
  t.fill(1.5);
  for (float v : t.to_vector()) EXPECT_EQ(v, 1.5f);
}

TEST(Tensor, ReshapeMismatchNamesBothShapes) {
  Tensor t = Tensor::zeros({2, 3});
  try {
    (void)t.reshape({4, 2});
    FAIL() << "expected ShapeError";
  } catch (const ShapeError& e) {
    EXPECT_NE(std::string(e.what()).find("[2, 3]"), std::string::npos);
    EXPECT_NE(std::string(e.what()).find("[4, 2]"), std::string::npos);
  }
}

TEST(Tensor, BlockedLayoutRoundTrip) {
  std::vector<float> v(2 * 32 * 3 * 5);
  for (std::size_t i = 0; i < v.size(); ++i) v[i] = static_cast<float>(i);
  Tensor t = Tensor::from_vector(v, {2, 32, 3, 5});
  Tensor b = t.to_layout(Layout::kNChw16c);
  EXPECT_EQ(b.layout(), Layout::kNChw16c);
  // Element (n=1, c=17, h=2, w=4) sits in block 1 of image 1.
  const float* p = b.data<float>();
  EXPECT_EQ(p[((1 * 2 + 1) * 15 + 2 * 5 + 4) * 16 + 1], v[((1 * 32 + 17) * 3 + 2) * 5 + 4]);
  EXPECT_EQ(b.to_vector(), v);
  // nChw8c: (n=1, c=17, h=2, w=4) sits in block 2 of image 1's 4; and straight from nChw16c.
  for (const Tensor& e : {t.to_layout(Layout::kNChw8c), b.to_layout(Layout::kNChw8c)}) {
    EXPECT_EQ(e.layout(), Layout::kNChw8c);
    EXPECT_EQ(e.data<float>()[((1 * 4 + 2) * 15 + 2 * 5 + 4) * 8 + 1], v[((1 * 32 + 17) * 3 + 2) * 5 + 4]);
    EXPECT_EQ(e.to_vector(), v);
    EXPECT_EQ(e.to_layout(Layout::kNChw16c).to_vector(), v);
  }
}

TEST(Tensor, BlockedLayoutNamesTheChannelsItNeeds) {
  const Tensor t = Tensor::zeros({1, 12, 2, 2});
  for (Layout l : {Layout::kNChw8c, Layout::kNChw16c}) {
    try {
      (void)t.to_layout(l);
      FAIL() << "expected ShapeError for 12 channels in " << layout_name(l);
    } catch (const ShapeError& e) {
      EXPECT_NE(std::string(e.what()).find(fmt::format("a multiple of {}", layout_block(l))), std::string::npos)
          << e.what();
    }
  }
}

TEST(DType, HalfConversionsRoundToNearestEven) {
  EXPECT_EQ(f16_to_f32(f32_to_f16(1.0f)), 1.0f);
  EXPECT_EQ(f16_to_f32(f32_to_f16(65504.0f)), 65504.0f);
  EXPECT_TRUE(std::isinf(f16_to_f32(f32_to_f16(70000.0f))));
  EXPECT_EQ(f16_to_f32(f32_to_f16(5.9604645e-08f)), 5.9604645e-08f);  // smallest subnormal
  EXPECT_EQ(f16_to_f32(f32_to_f16(1.0f + 1.0f / 2048)), 1.0f);       // tie goes to even
  EXPECT_EQ(bf16_to_f32(f32_to_bf16(1.0f + 1.0f / 256)), 1.0f);
  EXPECT_EQ(bf16_to_f32(f32_to_bf16(3.0f)), 3.0f);
  EXPECT_TRUE(std::isnan(bf16_to_f32(f32_to_bf16(std::nanf("")))));
  // Bulk (vectorised) and scalar paths agree on every f16 bit pattern.
  std::vector<std::uint16_t> all(65536);
  for (std::size_t i = 0; i < all.size(); ++i) all[i] = static_cast<std::uint16_t>(i);
  std::vector<float> f(all.size());
  convert_f16_to_f32(all.data(), f.data(), all.size());
  std::vector<std::uint16_t> back(all.size());
  convert_f32_to_f16(f.data(), back.data(), f.size());
  for (std::size_t i = 0; i < all.size(); ++i) {
    EXPECT_EQ(f32_to_f16(f16_to_f32(all[i])), back[i]) << i;
    if (!std::isnan(f[i])) {
      EXPECT_EQ(back[i], all[i]) << i;
    }
  }
  // ... and on f32 values that must round: 2^20 bit patterns spread over all 2^32 (every sign,
  // exponent and dropped-mantissa remainder, NaN payloads included), and the exact ties.
  std::vector<float> wide;
  for (std::uint32_t i = 0; i < (1u << 20); ++i) wide.push_back(std::bit_cast<float>(i * 4099u + (i >> 7)));
  for (std::uint32_t h = 0; h < 0x7c00u; ++h)
    wide.push_back(
        std::bit_cast<float>(std::bit_cast<std::uint32_t>(f16_to_f32(static_cast<std::uint16_t>(h))) + 0x1000u));
  std::vector<std::uint16_t> rounded(wide.size());
  convert_f32_to_f16(wide.data(), rounded.data(), wide.size());
  std::size_t bad = 0;
  for (std::size_t i = 0; i < wide.size() && bad < 5; ++i) {
    if (rounded[i] != f32_to_f16(wide[i])) {
      ++bad;
      ADD_FAILURE() << "f32 bits " << std::bit_cast<std::uint32_t>(wide[i]) << ": bulk " << rounded[i] << ", scalar "
                    << f32_to_f16(wide[i]);
    }
  }
}

}  // namespace
}  // namespace dtrain
