// Pixel conversion from the stored uint8 to the f32 the models train on. The conversion is x / 255
// in single precision, exactly what the PyTorch peer does (numpy `astype(float32) / 255`), so both
// see bit-identical inputs; a multiply by 1/255 would differ in the last bit for some values.
// Optional per-channel normalisation computes (x - mean[c]) / std[c] with the same two roundings as
// torchvision's Normalize (subtract, then divide).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "data/dataset.h"

namespace dtrain {

struct Normalization {
  std::vector<float> mean;    // per channel, on the x/255 scale; empty: no normalisation
  std::vector<float> stddev;  // per channel, > 0

  bool enabled() const { return !mean.empty(); }
  // Throws InputError unless disabled, or one finite mean and positive std per channel.
  void check(std::int64_t channels) const;
  std::string str() const;  // "mean [0.286] std [0.353]" or "none"
};

// dst[i] = src[i] / 255.0f for n values.
void pixels_to_float(const std::uint8_t* src, float* dst, std::int64_t n);

// In place on one CHW sample with `plane` = H*W values per channel.
void normalize_channels(float* chw, std::int64_t channels, std::int64_t plane, const Normalization& norm);

// Mean and (population) standard deviation of x/255 per channel over the whole dataset, the usual
// way to choose a Normalization from the training split.
Normalization channel_statistics(const Dataset& ds);

}  // namespace dtrain
