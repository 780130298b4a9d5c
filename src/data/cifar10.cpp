#include "data/cifar10.h"

#include <cstring>
#include <filesystem>

#include "core/error.h"
#include "data/file_bytes.h"

namespace dtrain {

CifarImages parse_cifar10_batch(const std::vector<std::uint8_t>& bytes, const std::string& path) {
  const auto size = static_cast<std::int64_t>(bytes.size());
  if (size == 0) throw DataError(fmt::format("{}: empty file, expected CIFAR-10 records", path));
  if (size % kCifarRecordBytes != 0) {
    throw DataError(fmt::format(
        "{}: size {} bytes is not a multiple of the {}-byte CIFAR-10 record (1 label byte + 3x32x32 pixels): "
        "{} whole records and {} bytes left over; truncated, or not the binary version of CIFAR-10?",
        path, size, kCifarRecordBytes, size / kCifarRecordBytes, size % kCifarRecordBytes));
  }
  CifarImages out;
  out.count = size / kCifarRecordBytes;
  out.pixels.resize(static_cast<std::size_t>(out.count * kCifarImageBytes));
  out.labels.resize(static_cast<std::size_t>(out.count));
  for (std::int64_t i = 0; i < out.count; ++i) {
    const std::uint8_t* record = bytes.data() + i * kCifarRecordBytes;
    if (record[0] >= kCifarClasses) {
      throw DataError(fmt::format("{}: record {} (byte offset {}) has label {}, outside [0, {}); not CIFAR-10?", path,
                                  i, i * kCifarRecordBytes, record[0], kCifarClasses));
    }
    out.labels[static_cast<std::size_t>(i)] = record[0];
    std::memcpy(out.pixels.data() + i * kCifarImageBytes, record + 1, kCifarImageBytes);
  }
  return out;
}

CifarImages read_cifar10_batch(const std::string& path) {
  return parse_cifar10_batch(read_file_bytes(path, kCifarMaxFileBytes), path);
}

std::vector<std::string> cifar10_split_files(std::string_view split) {
  if (split == "train") {
    return {"data_batch_1.bin", "data_batch_2.bin", "data_batch_3.bin", "data_batch_4.bin", "data_batch_5.bin"};
  }
  if (split == "test") return {"test_batch.bin"};
  throw InputError(fmt::format("unknown CIFAR-10 split '{}'; valid: train, test", split));
}

CifarImages read_cifar10(const std::string& dir, std::string_view split) {
  const std::vector<std::string> names = cifar10_split_files(split);
  std::vector<std::string> paths;
  std::string missing;
  for (const std::string& name : names) {
    paths.push_back((std::filesystem::path(dir) / name).string());
    std::error_code ec;
    if (!std::filesystem::exists(paths.back(), ec)) missing += (missing.empty() ? "" : ", ") + name;
  }
  if (!missing.empty()) {
    throw DataError(fmt::format("CIFAR-10 {} split in {}: missing {}", split, dir, missing));
  }
  CifarImages all;
  for (const std::string& path : paths) {
    CifarImages part = read_cifar10_batch(path);
    all.count += part.count;
    all.pixels.insert(all.pixels.end(), part.pixels.begin(), part.pixels.end());
    all.labels.insert(all.labels.end(), part.labels.begin(), part.labels.end());
  }
  return all;
}

std::vector<std::uint8_t> encode_cifar10_batch(const CifarImages& images) {
  if (images.labels.size() != static_cast<std::size_t>(images.count) ||
      images.pixels.size() != static_cast<std::size_t>(images.count * kCifarImageBytes)) {
    throw InputError(fmt::format("CIFAR-10 records: count {} but {} labels and {} pixels", images.count,
                                 images.labels.size(), images.pixels.size()));
  }
  std::vector<std::uint8_t> out(static_cast<std::size_t>(images.count * kCifarRecordBytes));
  for (std::int64_t i = 0; i < images.count; ++i) {
    const std::int32_t label = images.labels[static_cast<std::size_t>(i)];
    if (label < 0 || label > 255) throw InputError(fmt::format("CIFAR-10 label {} does not fit a byte", label));
    out[static_cast<std::size_t>(i * kCifarRecordBytes)] = static_cast<std::uint8_t>(label);
    std::memcpy(out.data() + i * kCifarRecordBytes + 1, images.pixels.data() + i * kCifarImageBytes, kCifarImageBytes);
  }
  return out;
}

}  // namespace dtrain
