#include "checkpoint/checkpoint_format.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <zlib.h>

#include <algorithm>
#include <tuple>

namespace dtrain::checkpoint_format {

std::uint32_t crc32(std::span<const std::uint8_t> bytes, std::uint32_t crc) {
  // zlib's crc32_z takes size_t lengths, so any size goes through in one call; a null buffer
  // would make it return the initial value instead of `crc`.
  if (bytes.empty()) return crc;
  return static_cast<std::uint32_t>(crc32_z(crc, bytes.data(), bytes.size()));
}

std::uint32_t content_crc(std::vector<StEntry> entries, const std::map<std::string, std::string>& metadata,
                          std::span<const std::uint8_t> data) {
  std::sort(entries.begin(), entries.end(), [](const StEntry& a, const StEntry& b) {
    return std::tie(a.begin, a.end, a.name) < std::tie(b.begin, b.end, b.name);
  });
  std::string canonical;
  for (const StEntry& e : entries) {
    canonical +=
        fmt::format("{}\t{}\t{}\t{},{}\n", e.name, st_dtype_name(e.dtype), fmt::join(e.shape, ","), e.begin, e.end);
  }
  for (const auto& [key, value] : metadata) {
    if (key != kChecksumKey) canonical += fmt::format("{}\t{}\n", key, value);
  }
  const auto* p = reinterpret_cast<const std::uint8_t*>(canonical.data());
  return crc32(data, crc32({p, canonical.size()}));
}

}  // namespace dtrain::checkpoint_format
