#include "data/pixels.h"

#include <fmt/ranges.h>

#include <algorithm>
#include <array>
#include <cmath>

#include "core/error.h"

namespace dtrain {

void Normalization::check(std::int64_t channels) const {
  if (!enabled() && stddev.empty()) return;
  if (static_cast<std::int64_t>(mean.size()) != channels || static_cast<std::int64_t>(stddev.size()) != channels) {
    throw InputError(fmt::format("normalisation has {} means and {} standard deviations; the data has {} channels",
                                 mean.size(), stddev.size(), channels));
  }
  for (std::size_t c = 0; c < mean.size(); ++c) {
    if (!std::isfinite(mean[c]) || !std::isfinite(stddev[c]) || !(stddev[c] > 0)) {
      throw InputError(fmt::format("normalisation of channel {}: mean {} std {}; need a finite mean and std > 0", c,
                                   mean[c], stddev[c]));
    }
  }
}

std::string Normalization::str() const {
  if (!enabled()) return "none";
  return fmt::format("mean [{}] std [{}]", fmt::join(mean, ", "), fmt::join(stddev, ", "));
}

void pixels_to_float(const std::uint8_t* src, float* dst, std::int64_t n) {
  // A table makes this a gather of exactly-rounded quotients; it is the same value as the division.
  static const std::array<float, 256> kTable = [] {
    std::array<float, 256> t{};
    for (int v = 0; v < 256; ++v) t[static_cast<std::size_t>(v)] = static_cast<float>(v) / 255.0f;
    return t;
  }();
  for (std::int64_t i = 0; i < n; ++i) dst[i] = kTable[src[i]];
}

void normalize_channels(float* chw, std::int64_t channels, std::int64_t plane, const Normalization& norm) {
  if (!norm.enabled()) return;
  for (std::int64_t c = 0; c < channels; ++c) {
    const float m = norm.mean[static_cast<std::size_t>(c)];
    const float s = norm.stddev[static_cast<std::size_t>(c)];
    float* p = chw + c * plane;
    for (std::int64_t i = 0; i < plane; ++i) p[i] = (p[i] - m) / s;
  }
}

Normalization channel_statistics(const Dataset& ds) {
  if (ds.size() == 0) throw InputError(fmt::format("channel statistics of dataset {}: it has no samples", ds.name));
  const std::int64_t plane = ds.height * ds.width;
  // Histograms per channel: exact counts, so the result does not depend on summation order.
  std::vector<std::array<std::int64_t, 256>> hist(static_cast<std::size_t>(ds.channels));
  for (auto& h : hist) h.fill(0);
  for (std::int64_t i = 0; i < ds.size(); ++i) {
    const std::uint8_t* img = ds.image(i);
    for (std::int64_t c = 0; c < ds.channels; ++c) {
      auto& h = hist[static_cast<std::size_t>(c)];
      for (std::int64_t k = 0; k < plane; ++k) ++h[img[c * plane + k]];
    }
  }
  Normalization norm;
  const double count = static_cast<double>(ds.size() * plane);
  for (const auto& h : hist) {
    double sum = 0, sum_sq = 0;
    for (int v = 0; v < 256; ++v) {
      const double x = v / 255.0;
      sum += static_cast<double>(h[static_cast<std::size_t>(v)]) * x;
      sum_sq += static_cast<double>(h[static_cast<std::size_t>(v)]) * x * x;
    }
    const double mean = sum / count;
    const double var = std::max(0.0, sum_sq / count - mean * mean);
    norm.mean.push_back(static_cast<float>(mean));
    // A constant channel would divide by zero; leave such a channel unscaled.
    norm.stddev.push_back(var > 0 ? static_cast<float>(std::sqrt(var)) : 1.0f);
  }
  return norm;
}

}  // namespace dtrain
