#include "data/augment.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <set>

#include "core/error.h"

namespace dtrain {
namespace {

constexpr std::int64_t kC = 2, kH = 7, kW = 9, kN = kC * kH * kW;

std::vector<float> ramp() {
  std::vector<float> v(kN);
  for (std::int64_t i = 0; i < kN; ++i) v[static_cast<std::size_t>(i)] = static_cast<float>(i % 13) / 13.0f + 0.01f;
  return v;
}

float at(const std::vector<float>& v, std::int64_t c, std::int64_t y, std::int64_t x) {
  return v[static_cast<std::size_t>((c * kH + y) * kW + x)];
}

TEST(Augment, FlipTwiceIsIdentityAndMirrorsRows) {
  std::vector<float> v = ramp();
  const std::vector<float> orig = v;
  flip_horizontal(v.data(), kC, kH, kW);
  EXPECT_NE(v, orig);
  for (std::int64_t c = 0; c < kC; ++c) {
    for (std::int64_t y = 0; y < kH; ++y) {
      for (std::int64_t x = 0; x < kW; ++x) EXPECT_EQ(at(v, c, y, x), at(orig, c, y, kW - 1 - x));
    }
  }
  flip_horizontal(v.data(), kC, kH, kW);
  EXPECT_EQ(v, orig);

  std::vector<std::uint8_t> u(kN);
  for (std::size_t i = 0; i < u.size(); ++i) u[i] = static_cast<std::uint8_t>(i);
  const auto uorig = u;
  flip_horizontal(u.data(), kC, kH, kW);
  flip_horizontal(u.data(), kC, kH, kW);
  EXPECT_EQ(u, uorig);
}

TEST(Augment, ZeroTranslationAndZeroRotationAreIdentity) {
  const std::vector<float> orig = ramp();
  std::vector<float> out(kN, -1.0f);
  translate_image(orig.data(), out.data(), kC, kH, kW, 0, 0);
  EXPECT_EQ(out, orig);
  std::fill(out.begin(), out.end(), -1.0f);
  rotate_image(orig.data(), out.data(), kC, kH, kW, 0.0);
  EXPECT_EQ(out, orig);  // exact, including the border pixels
  // A configuration with translate:0 and rotate:0 does nothing either.
  std::vector<float> v = orig;
  augment_sample(parse_augment("translate:0,rotate:0"), 1, 2, 3, v.data(), kC, kH, kW);
  EXPECT_EQ(v, orig);
}

TEST(Augment, TranslationMovesContentByOffsetWithZeroFill) {
  const std::vector<float> orig = ramp();
  for (int dx : {-10, -3, -1, 0, 2, 8, 9}) {
    for (int dy : {-7, -2, 0, 1, 6}) {
      std::vector<float> out(kN, -1.0f);
      translate_image(orig.data(), out.data(), kC, kH, kW, dx, dy);
      for (std::int64_t c = 0; c < kC; ++c) {
        for (std::int64_t y = 0; y < kH; ++y) {
          for (std::int64_t x = 0; x < kW; ++x) {
            const std::int64_t sy = y - dy, sx = x - dx;
            const float expected = (sy >= 0 && sy < kH && sx >= 0 && sx < kW) ? at(orig, c, sy, sx) : 0.0f;
            ASSERT_EQ(at(out, c, y, x), expected) << dx << " " << dy;
          }
        }
      }
    }
  }
}

// With random translation, a single bright pixel lands where the drawn offset says, and the
// offsets cover [-K, K] (padding by K then cropping).
TEST(Augment, RandomTranslationMovesContentByDrawnOffset) {
  const AugmentConfig cfg = parse_augment("translate:3");
  std::set<int> dxs, dys;
  for (std::int64_t index = 0; index < 200; ++index) {
    std::vector<float> v(kN, 0.0f);
    v[static_cast<std::size_t>((1 * kH + 3) * kW + 4)] = 1.0f;  // channel 1, (y, x) = (3, 4)
    augment_sample(cfg, 11, 0, index, v.data(), kC, kH, kW);
    const AugmentDraw d = draw_augment(cfg, 11, 0, index);
    ASSERT_TRUE(d.dx >= -3 && d.dx <= 3 && d.dy >= -3 && d.dy <= 3);
    dxs.insert(d.dx);
    dys.insert(d.dy);
    EXPECT_EQ(at(v, 1, 3 + d.dy, 4 + d.dx), 1.0f);
    float sum = 0;
    for (float f : v) sum += f;
    EXPECT_EQ(sum, 1.0f);
  }
  EXPECT_EQ(dxs.size(), 7u);
  EXPECT_EQ(dys.size(), 7u);
}

TEST(Augment, RotationTurnsCounterClockwiseAndKeepsCentre) {
  // 3x3: the pixel right of centre goes to above centre under +90 degrees.
  std::vector<float> src(9, 0.0f), dst(9, -1.0f);
  src[1 * 3 + 2] = 1.0f;
  src[1 * 3 + 1] = 0.5f;
  rotate_image(src.data(), dst.data(), 1, 3, 3, 90.0);
  EXPECT_NEAR(dst[0 * 3 + 1], 1.0f, 1e-6);
  EXPECT_NEAR(dst[1 * 3 + 1], 0.5f, 1e-6);
  EXPECT_NEAR(dst[1 * 3 + 2], 0.0f, 1e-6);
  // Corners rotated by 45 degrees sample mostly outside: zero fill. Bilinear values stay in range.
  std::vector<float> ones(25, 1.0f), r(25);
  rotate_image(ones.data(), r.data(), 1, 5, 5, 45.0);
  EXPECT_LT(r[0], 0.5f);
  EXPECT_NEAR(r[12], 1.0f, 1e-6);
  for (float f : r) EXPECT_TRUE(f >= 0.0f && f <= 1.0f + 1e-6f);
  // uint8 rounds and stays within [0, 255].
  std::vector<std::uint8_t> u(25, 255), ur(25);
  rotate_image(u.data(), ur.data(), 1, 5, 5, 10.0);
  EXPECT_EQ(ur[12], 255);
}

TEST(Augment, RotationAnglesAreWithinRangeAndVary) {
  const AugmentConfig cfg = parse_augment("rotate:10");
  double lo = 0, hi = 0;
  for (std::int64_t i = 0; i < 1000; ++i) {
    const double a = draw_augment(cfg, 3, 1, i).degrees;
    ASSERT_TRUE(a >= -10 && a <= 10) << a;
    lo = std::min(lo, a);
    hi = std::max(hi, a);
  }
  EXPECT_LT(lo, -9.5);
  EXPECT_GT(hi, 9.5);
}

TEST(Augment, NoiseHasRequestedMeanAndStd) {
  const std::int64_t n = 200001;  // odd: the unpaired last value is covered too
  std::vector<float> v(static_cast<std::size_t>(n), 0.5f);
  add_gaussian_noise(v.data(), n, 0.05, 99);
  double s = 0, s2 = 0;
  for (float f : v) {
    s += f - 0.5;
    s2 += (f - 0.5) * (f - 0.5);
  }
  const double mean = s / static_cast<double>(n), sd = std::sqrt(s2 / static_cast<double>(n) - mean * mean);
  EXPECT_NEAR(mean, 0.0, 4 * 0.05 / std::sqrt(static_cast<double>(n)));
  EXPECT_NEAR(sd, 0.05, 0.0005);
  EXPECT_NE(v.back(), 0.5f);
  // uint8: 255 * sigma levels, rounded and saturated.
  std::vector<std::uint8_t> u(100000, 128);
  add_gaussian_noise(u.data(), static_cast<std::int64_t>(u.size()), 0.02, 5);
  double us = 0;
  for (std::uint8_t b : u) us += b;
  EXPECT_NEAR(us / static_cast<double>(u.size()), 128.0, 0.1);
  std::vector<std::uint8_t> top(1000, 255);
  add_gaussian_noise(top.data(), 1000, 0.5, 5);
  // Positive noise saturates at 255 instead of wrapping around to small values.
  int saturated = 0;
  for (std::uint8_t b : top) saturated += b == 255;
  EXPECT_GT(saturated, 450);
}

TEST(Augment, DeterministicPerSeedEpochAndIndex) {
  const AugmentConfig cfg = parse_augment("flip,translate:2,rotate:15,noise:0.1");
  const std::vector<float> orig = ramp();
  auto run = [&](std::uint64_t seed, std::int64_t epoch, std::int64_t index) {
    std::vector<float> v = orig;
    augment_sample(cfg, seed, epoch, index, v.data(), kC, kH, kW);
    return v;
  };
  EXPECT_EQ(run(1, 2, 3), run(1, 2, 3));
  EXPECT_NE(run(1, 2, 3), run(1, 2, 4));
  EXPECT_NE(run(1, 2, 3), run(1, 3, 3));
  EXPECT_NE(run(1, 2, 3), run(2, 2, 3));
  // Each operation's draw is independent of the others being enabled.
  EXPECT_EQ(draw_augment(parse_augment("flip"), 1, 2, 3).flip, draw_augment(cfg, 1, 2, 3).flip);
  EXPECT_EQ(draw_augment(parse_augment("translate:2"), 1, 2, 3).dx, draw_augment(cfg, 1, 2, 3).dx);
  // Flips happen about half of the time.
  int flips = 0;
  for (std::int64_t i = 0; i < 1000; ++i) flips += draw_augment(cfg, 1, 0, i).flip;
  EXPECT_NEAR(flips, 500, 60);
}

TEST(Augment, ParseAcceptsSpecAndRoundTrips) {
  const AugmentConfig cfg = parse_augment("flip, translate:4,rotate:10,noise:0.05");
  EXPECT_TRUE(cfg.flip);
  EXPECT_EQ(cfg.translate, 4);
  EXPECT_EQ(cfg.rotate, 10.0);
  EXPECT_EQ(cfg.noise, 0.05);
  EXPECT_EQ(parse_augment(cfg.str()), cfg);
  EXPECT_EQ(cfg.str(), "flip,translate:4,rotate:10,noise:0.05");
  EXPECT_FALSE(parse_augment("").any());
  EXPECT_FALSE(parse_augment("none").any());
  EXPECT_EQ(AugmentConfig{}.str(), "none");
}

TEST(Augment, ParseErrorsListValidNames) {
  for (const char* bad : {"flop", "flip:1", "translate", "translate:-1", "translate:2.5", "rotate:200", "rotate:x",
                          "noise:-0.1", "noise:nan", "flip,,noise:0.1", "flip,flip"}) {
    try {
      (void)parse_augment(bad);
      ADD_FAILURE() << "no error for " << bad;
    } catch (const InputError& e) {
      const std::string msg = e.what();
      EXPECT_NE(msg.find("flip, translate:PIXELS, rotate:DEGREES, noise:SIGMA"), std::string::npos) << msg;
      EXPECT_NE(msg.find(bad), std::string::npos) << msg;
    }
  }
}

}  // namespace
}  // namespace dtrain
