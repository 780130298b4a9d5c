#include "data/augment.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstring>
#include <numbers>
#include <type_traits>

#include "core/error.h"
#include "core/random.h"

namespace dtrain {
namespace {

constexpr const char* kValidAugmentations = "flip, translate:PIXELS, rotate:DEGREES, noise:SIGMA (or none)";

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

template <typename V>
bool parse_number(std::string_view text, V& out) {
  const char* end = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(text.data(), end, out);
  return ec == std::errc() && ptr == end;
}

template <typename T>
T to_pixel(double v) {
  if constexpr (std::is_same_v<T, std::uint8_t>) {
    return static_cast<std::uint8_t>(std::clamp(std::floor(v + 0.5), 0.0, 255.0));
  } else {
    return static_cast<T>(v);
  }
}

std::uint64_t stream_key(std::uint64_t seed, std::int64_t epoch, std::int64_t index, RngPurpose purpose) {
  return rng_key(seed, static_cast<std::uint64_t>(epoch), static_cast<std::uint64_t>(index),
                 static_cast<std::uint64_t>(purpose));
}

}  // namespace

std::string AugmentConfig::str() const {
  std::vector<std::string> items;
  if (flip) items.emplace_back("flip");
  if (translate > 0) items.push_back(fmt::format("translate:{}", translate));
  if (rotate > 0) items.push_back(fmt::format("rotate:{}", rotate));
  if (noise > 0) items.push_back(fmt::format("noise:{}", noise));
  if (items.empty()) return "none";
  std::string out;
  for (const std::string& s : items) out += (out.empty() ? "" : ",") + s;
  return out;
}

AugmentConfig parse_augment(std::string_view spec) {
  AugmentConfig config;
  const std::string_view all = trim(spec);
  if (all.empty() || all == "none") return config;
  std::vector<std::string> seen;
  std::string_view rest = all;
  while (true) {
    const std::size_t comma = rest.find(',');
    const std::string_view item = trim(rest.substr(0, comma));
    const std::size_t colon = item.find(':');
    const std::string_view name = trim(item.substr(0, colon));
    const bool has_value = colon != std::string_view::npos;
    const std::string_view value = has_value ? trim(item.substr(colon + 1)) : std::string_view();
    auto fail = [&](std::string_view why) {
      return InputError(fmt::format("augmentation '{}' in '{}': {}; valid: {}", item, spec, why, kValidAugmentations));
    };
    if (std::find(seen.begin(), seen.end(), name) != seen.end()) throw fail("given twice");
    seen.emplace_back(name);
    if (name == "flip") {
      if (has_value) throw fail("flip takes no value");
      config.flip = true;
    } else if (name == "translate") {
      if (!parse_number(value, config.translate) || config.translate < 0) {
        throw fail("needs a whole number of pixels >= 0, as in translate:4");
      }
    } else if (name == "rotate") {
      if (!parse_number(value, config.rotate) || !(config.rotate >= 0 && config.rotate <= 180)) {
        throw fail("needs a number of degrees in [0, 180], as in rotate:10");
      }
    } else if (name == "noise") {
      if (!parse_number(value, config.noise) || !(config.noise >= 0) || !std::isfinite(config.noise)) {
        throw fail("needs a standard deviation >= 0, as in noise:0.05");
      }
    } else {
      throw fail(name.empty() ? "empty item" : "unknown augmentation");
    }
    if (comma == std::string_view::npos) break;
    rest = rest.substr(comma + 1);
  }
  return config;
}

AugmentDraw draw_augment(const AugmentConfig& config, std::uint64_t seed, std::int64_t epoch, std::int64_t index) {
  AugmentDraw d;
  if (config.flip) d.flip = (Rng(stream_key(seed, epoch, index, RngPurpose::kFlip)).next() >> 63) != 0;
  if (config.translate > 0) {
    Rng rng(stream_key(seed, epoch, index, RngPurpose::kTranslate));
    d.dx = static_cast<int>(rng.between(-config.translate, config.translate));
    d.dy = static_cast<int>(rng.between(-config.translate, config.translate));
  }
  if (config.rotate > 0) {
    Rng rng(stream_key(seed, epoch, index, RngPurpose::kRotate));
    d.degrees = config.rotate * (2 * rng.uniform() - 1);
  }
  d.noise_key = stream_key(seed, epoch, index, RngPurpose::kNoise);
  return d;
}

template <typename T>
void flip_horizontal(T* chw, std::int64_t channels, std::int64_t height, std::int64_t width) {
  for (std::int64_t row = 0; row < channels * height; ++row) std::reverse(chw + row * width, chw + (row + 1) * width);
}

template <typename T>
void translate_image(const T* src, T* dst, std::int64_t channels, std::int64_t height, std::int64_t width, int dx,
                     int dy) {
  // Columns of dst that receive content: x with 0 <= x - dx < width.
  const std::int64_t x0 = std::clamp<std::int64_t>(dx, 0, width);
  const std::int64_t x1 = std::clamp<std::int64_t>(width + dx, 0, width);
  for (std::int64_t c = 0; c < channels; ++c) {
    for (std::int64_t y = 0; y < height; ++y) {
      T* out = dst + (c * height + y) * width;
      const std::int64_t sy = y - dy;
      if (sy < 0 || sy >= height || x0 >= x1) {
        std::fill(out, out + width, T{0});
        continue;
      }
      const T* in = src + (c * height + sy) * width;
      std::fill(out, out + x0, T{0});
      std::copy(in + (x0 - dx), in + (x1 - dx), out + x0);
      std::fill(out + x1, out + width, T{0});
    }
  }
}

template <typename T>
void rotate_image(const T* src, T* dst, std::int64_t channels, std::int64_t height, std::int64_t width,
                  double degrees) {
  // Inverse mapping: each output pixel samples the source at its position rotated back. With rows
  // growing downwards, a counter-clockwise turn on screen by t maps offset (u, v) from the centre
  // to (u cos t + v sin t, -u sin t + v cos t); the inverse is used below. At t = 0 the source
  // position is exactly the pixel itself, so the result is an exact copy.
  const double t = degrees * std::numbers::pi / 180.0;
  const double ct = std::cos(t), st = std::sin(t);
  const double cx = 0.5 * static_cast<double>(width - 1), cy = 0.5 * static_cast<double>(height - 1);
  const std::int64_t plane = height * width;
  for (std::int64_t y = 0; y < height; ++y) {
    for (std::int64_t x = 0; x < width; ++x) {
      const double u = static_cast<double>(x) - cx, v = static_cast<double>(y) - cy;
      const double sx = cx + u * ct - v * st;
      const double sy = cy + u * st + v * ct;
      const double fx0 = std::floor(sx), fy0 = std::floor(sy);
      const double ax = sx - fx0, ay = sy - fy0;
      // Neighbours outside the image contribute zero (zero fill); the casts are safe because
      // |sx|, |sy| stay within about 1.5 times the image size.
      const auto ix = static_cast<std::int64_t>(fx0), iy = static_cast<std::int64_t>(fy0);
      const double w[4] = {(1 - ax) * (1 - ay), ax * (1 - ay), (1 - ax) * ay, ax * ay};
      std::int64_t off[4];
      bool in[4];
      for (int k = 0; k < 4; ++k) {
        const std::int64_t px = ix + (k & 1), py = iy + (k >> 1);
        in[k] = px >= 0 && px < width && py >= 0 && py < height && w[k] != 0;
        off[k] = in[k] ? py * width + px : 0;
      }
      for (std::int64_t c = 0; c < channels; ++c) {
        const T* p = src + c * plane;
        double acc = 0;
        for (int k = 0; k < 4; ++k) {
          if (in[k]) acc += w[k] * static_cast<double>(p[off[k]]);
        }
        dst[c * plane + y * width + x] = to_pixel<T>(acc);
      }
    }
  }
}

void add_gaussian_noise(float* x, std::int64_t n, double sigma, std::uint64_t key) {
  Rng rng(key);
  for (std::int64_t i = 0; i < n; i += 2) {
    double a, b;
    rng.normal_pair(a, b);
    x[i] = static_cast<float>(x[i] + sigma * a);
    if (i + 1 < n) x[i + 1] = static_cast<float>(x[i + 1] + sigma * b);
  }
}

void add_gaussian_noise(std::uint8_t* x, std::int64_t n, double sigma, std::uint64_t key) {
  Rng rng(key);
  const double levels = 255.0 * sigma;
  for (std::int64_t i = 0; i < n; i += 2) {
    double a, b;
    rng.normal_pair(a, b);
    x[i] = to_pixel<std::uint8_t>(x[i] + levels * a);
    if (i + 1 < n) x[i + 1] = to_pixel<std::uint8_t>(x[i + 1] + levels * b);
  }
}

template <typename T>
void apply_augment(const AugmentConfig& config, const AugmentDraw& draw, T* chw, std::int64_t channels,
                   std::int64_t height, std::int64_t width, std::vector<T>& scratch) {
  const std::int64_t n = channels * height * width;
  if (config.flip && draw.flip) flip_horizontal(chw, channels, height, width);
  if (config.translate > 0 && (draw.dx != 0 || draw.dy != 0)) {
    scratch.resize(static_cast<std::size_t>(n));
    translate_image(chw, scratch.data(), channels, height, width, draw.dx, draw.dy);
    std::copy(scratch.begin(), scratch.begin() + n, chw);
  }
  if (config.rotate > 0 && draw.degrees != 0) {
    scratch.resize(static_cast<std::size_t>(n));
    rotate_image(chw, scratch.data(), channels, height, width, draw.degrees);
    std::copy(scratch.begin(), scratch.begin() + n, chw);
  }
  if (config.noise > 0) add_gaussian_noise(chw, n, config.noise, draw.noise_key);
}

template <typename T>
void augment_sample(const AugmentConfig& config, std::uint64_t seed, std::int64_t epoch, std::int64_t index, T* chw,
                    std::int64_t channels, std::int64_t height, std::int64_t width) {
  if (!config.any()) return;
  std::vector<T> scratch;
  apply_augment(config, draw_augment(config, seed, epoch, index), chw, channels, height, width, scratch);
}

// A type cannot be parenthesised, so the macro parentheses check does not apply here.
// NOLINTBEGIN(bugprone-macro-parentheses)
#define DTRAIN_INSTANTIATE_AUGMENT(T)                                                                                \
  template void flip_horizontal<T>(T*, std::int64_t, std::int64_t, std::int64_t);                                    \
  template void translate_image<T>(const T*, T*, std::int64_t, std::int64_t, std::int64_t, int, int);                \
  template void rotate_image<T>(const T*, T*, std::int64_t, std::int64_t, std::int64_t, double);                     \
  template void apply_augment<T>(const AugmentConfig&, const AugmentDraw&, T*, std::int64_t, std::int64_t,           \
                                 std::int64_t, std::vector<T>&);                                                     \
  template void augment_sample<T>(const AugmentConfig&, std::uint64_t, std::int64_t, std::int64_t, T*, std::int64_t, \
                                  std::int64_t, std::int64_t);

DTRAIN_INSTANTIATE_AUGMENT(float)
DTRAIN_INSTANTIATE_AUGMENT(std::uint8_t)
#undef DTRAIN_INSTANTIATE_AUGMENT
// NOLINTEND(bugprone-macro-parentheses)

}  // namespace dtrain
