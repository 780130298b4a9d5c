// Data augmentation on one sample in CHW order, f32 (the x/255 scale, before normalisation, so that
// zero fill is black) or uint8. Each random choice is drawn from a stream keyed by
// (seed, epoch, sample index, operation), so a sample's augmentation depends on nothing else: not
// on thread timing, batch position, rank, or which other operations are enabled.
//
// Operations, applied in this order:
//   flip            horizontal flip with probability 1/2
//   translate:K     zero-pad by K pixels on every side and crop a random HxW window back out, i.e.
//                   shift the content by (dx, dy), each uniform in [-K, K], filling with zeros
//                   (torchvision's RandomCrop(size, padding=K) has the same distribution)
//   rotate:D        rotate by an angle uniform in [-D, D] degrees about the image centre,
//                   bilinear interpolation, zeros outside; positive angles turn counter-clockwise
//                   as the image is displayed (row 0 at the top)
//   noise:S         add gaussian noise of standard deviation S on the [0, 1] pixel scale (uint8
//                   data: 255*S levels, rounded and saturated). Float data is not clamped, so the
//                   noise stays zero-mean on the many black pixels of MNIST-like data.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace dtrain {

struct AugmentConfig {
  bool flip = false;
  int translate = 0;  // pixels, >= 0
  double rotate = 0;  // degrees, in [0, 180]
  double noise = 0;   // standard deviation, >= 0

  bool any() const { return flip || translate > 0 || rotate > 0 || noise > 0; }
  // The spec string parse_augment reads back: "flip,translate:4", "none" when nothing is on.
  std::string str() const;
  bool operator==(const AugmentConfig&) const = default;
};

// Parses a comma list such as "flip,translate:4,rotate:10,noise:0.05" ("" or "none": no
// augmentation). Throws InputError naming the bad item and listing the valid ones.
AugmentConfig parse_augment(std::string_view spec);

// The random choices for one sample.
struct AugmentDraw {
  bool flip = false;
  int dx = 0;  // content moves right by dx and down by dy pixels
  int dy = 0;
  double degrees = 0;
  std::uint64_t noise_key = 0;  // key of the noise stream
};

AugmentDraw draw_augment(const AugmentConfig& config, std::uint64_t seed, std::int64_t epoch, std::int64_t index);

// The operations, for T = float or std::uint8_t. src and dst must not overlap.
template <typename T>
void flip_horizontal(T* chw, std::int64_t channels, std::int64_t height, std::int64_t width);
// dst(y, x) = src(y - dy, x - dx), zero where that falls outside the image.
template <typename T>
void translate_image(const T* src, T* dst, std::int64_t channels, std::int64_t height, std::int64_t width, int dx,
                     int dy);
template <typename T>
void rotate_image(const T* src, T* dst, std::int64_t channels, std::int64_t height, std::int64_t width, double degrees);
void add_gaussian_noise(float* x, std::int64_t n, double sigma, std::uint64_t key);
void add_gaussian_noise(std::uint8_t* x, std::int64_t n, double sigma, std::uint64_t key);

// Applies the enabled operations with the given draws in place; scratch is resized as needed and
// can be reused across samples to avoid allocations.
template <typename T>
void apply_augment(const AugmentConfig& config, const AugmentDraw& draw, T* chw, std::int64_t channels,
                   std::int64_t height, std::int64_t width, std::vector<T>& scratch);

// draw_augment + apply_augment.
template <typename T>
void augment_sample(const AugmentConfig& config, std::uint64_t seed, std::int64_t epoch, std::int64_t index, T* chw,
                    std::int64_t channels, std::int64_t height, std::int64_t width);

}  // namespace dtrain
