// CIFAR-10, binary version (cifar-10-binary.tar.gz, directory cifar-10-batches-bin): each batch
// file is a sequence of 3073-byte records, one label byte (0..9) then 3x32x32 pixel bytes,
// channel-major (the red plane, then green, then blue), rows top to bottom. The training split is
// data_batch_1.bin .. data_batch_5.bin, the test split test_batch.bin, 10000 records each.
// Every failure is a DataError that names the file and what is wrong with it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace dtrain {

inline constexpr std::int64_t kCifarChannels = 3;
inline constexpr std::int64_t kCifarSide = 32;
inline constexpr std::int64_t kCifarImageBytes = kCifarChannels * kCifarSide * kCifarSide;  // 3072
inline constexpr std::int64_t kCifarRecordBytes = 1 + kCifarImageBytes;                     // 3073
inline constexpr int kCifarClasses = 10;
// The largest batch file we accept (the real ones are 30 MB).
inline constexpr std::size_t kCifarMaxFileBytes = std::size_t{1} << 30;

struct CifarImages {
  std::int64_t count = 0;
  std::vector<std::uint8_t> pixels;  // count x 3 x 32 x 32
  std::vector<std::int32_t> labels;  // count, in [0, 10)
};

// Parse one batch file's contents; `path` names the source in messages.
CifarImages parse_cifar10_batch(const std::vector<std::uint8_t>& bytes, const std::string& path);
CifarImages read_cifar10_batch(const std::string& path);

// File names of a split ("train" or "test"); other splits are an InputError.
std::vector<std::string> cifar10_split_files(std::string_view split);

// Reads and concatenates a split's batch files from `dir`. When some are missing, the DataError
// lists every missing file, not only the first.
CifarImages read_cifar10(const std::string& dir, std::string_view split);

// Serialise records (the inverse of parse_cifar10_batch), for tests and tools.
std::vector<std::uint8_t> encode_cifar10_batch(const CifarImages& images);

}  // namespace dtrain
