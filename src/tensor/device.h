// Where a tensor's memory lives. Kernels are reached through the backend registered for the
// tensor's device (tensor/backend.h), so a CUDA backend plugs in without touching ops or layers.
#pragma once

#include <cstdint>
#include <string>

namespace dtrain {

enum class DeviceType : std::uint8_t { kCPU, kCUDA };

struct Device {
  DeviceType type = DeviceType::kCPU;
  int index = 0;

  static Device cpu() { return {}; }
  static Device cuda(int i) { return {DeviceType::kCUDA, i}; }
  bool operator==(const Device&) const = default;
  std::string str() const { return type == DeviceType::kCPU ? "cpu" : "cuda:" + std::to_string(index); }
};

// Memory layout of a tensor's elements. Shapes are always logical ([N, C, H, W] for images).
enum class Layout : std::uint8_t {
  kPlain,    // row-major in logical order
  kNChw16c,  // 4-D, channels in blocks of 16 (C % 16 == 0): offset ((n*C/16 + c/16)*H*W + h*W + w)*16 + c%16.
             // The layout oneDNN's AVX-512 convolutions run in natively; keeping activations in it
             // avoids a reorder before and after every convolution.
  kNChw8c,   // The same with blocks of 8 channels (C % 8 == 0): the layout of oneDNN's AVX2 kernels,
             // whose pooling has no JIT kernel for nChw16c (its reference kernel is 100x slower).
};

inline const char* layout_name(Layout l) {
  return l == Layout::kPlain ? "plain" : l == Layout::kNChw16c ? "nChw16c" : "nChw8c";
}

// Channels per block of a channel-blocked layout (1 for plain).
inline std::int64_t layout_block(Layout l) { return l == Layout::kPlain ? 1 : l == Layout::kNChw16c ? 16 : 8; }

}  // namespace dtrain
