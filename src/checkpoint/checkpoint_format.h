// What the checkpoint writer and reader agree on: metadata keys, tensor name prefixes and the
// checksum.
#pragma once

#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <vector>

#include "checkpoint/safetensors.h"

namespace dtrain::checkpoint_format {

inline constexpr const char* kFormat = "checkpoint 1";  // value of "dtrain.format"
inline constexpr const char* kFormatKey = "dtrain.format";
inline constexpr const char* kChecksumKey = "dtrain.crc32";
inline constexpr const char* kOptimizerPrefix = "optimizer.";
inline constexpr const char* kRankPrefix = "rank.";

// CRC-32 continuing from `crc` (zlib's polynomial).
std::uint32_t crc32(std::span<const std::uint8_t> bytes, std::uint32_t crc = 0);

// The checksum covers what the header says as well as the data: a canonical form of every entry
// (sorted by offset, then name) and of every metadata value but the checksum itself, then the
// data section. So any corruption that still parses (a changed digit of a shape or of the
// configuration, a flipped bit in a tensor) is caught: CRC-32 detects every error burst of up to
// 32 bits. Writers that stream pass an empty `data` and continue with crc32() over each tensor.
std::uint32_t content_crc(std::vector<StEntry> entries, const std::map<std::string, std::string>& metadata,
                          std::span<const std::uint8_t> data);

}  // namespace dtrain::checkpoint_format
