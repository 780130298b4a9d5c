// The safetensors format (what PyTorch and Hugging Face tools read): an 8-byte little-endian
// length N, N bytes of JSON header, then the raw little-endian tensor data. The header maps each
// tensor name to {"dtype": "F32", "shape": [...], "data_offsets": [begin, end]} (offsets relative
// to the first data byte) and may hold "__metadata__", an object of strings.
//
// Reading is hostile-input safe: the header length is checked against the file size and a fixed
// limit, then every entry (dtype, shape, offsets) against the data size, before any tensor memory
// is allocated. The tensors must tile the data section exactly (no gaps, overlaps or trailing
// bytes), which is what the reference implementation demands too; so a file cut short or extended
// never parses. Every failure is a DataError naming the file and what is wrong.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace dtrain {

// Element types of the format, named as in the header ("F32", "BF16", ...).
enum class StDType : std::uint8_t { kBool, kU8, kI8, kU16, kI16, kF16, kBF16, kU32, kI32, kF32, kU64, kI64, kF64 };

std::size_t st_dtype_size(StDType t);
std::string_view st_dtype_name(StDType t);
std::optional<StDType> parse_st_dtype(std::string_view name);

// The reference implementation's limit on the header; far above what real files need (a few
// hundred bytes per tensor), far below what a lying length field could make us allocate.
inline constexpr std::uint64_t kSafetensorsMaxHeaderBytes = 100'000'000;

struct StEntry {
  std::string name;
  StDType dtype = StDType::kF32;
  std::vector<std::int64_t> shape;   // [] is a scalar (one element)
  std::uint64_t begin = 0, end = 0;  // byte range in the data section
  std::int64_t numel() const;
  std::uint64_t nbytes() const { return end - begin; }
};

struct StHeader {
  std::vector<StEntry> tensors;  // in data order
  std::map<std::string, std::string> metadata;
  std::uint64_t data_bytes = 0;  // size of the data section
  const StEntry* find(std::string_view name) const;
};

// Parses and validates a header's JSON against a data section of `data_bytes` bytes; `source`
// names the file in messages.
StHeader parse_safetensors_header(std::string_view json, std::uint64_t data_bytes, const std::string& source);

class SafetensorsFile {
 public:
  // Reads and validates a whole file; the data is read only after the header checked out.
  static SafetensorsFile read(const std::string& path);
  // Validates in-memory file contents (`source` names them in messages).
  static SafetensorsFile parse(std::vector<std::uint8_t> bytes, const std::string& source);

  const std::string& source() const { return source_; }
  const std::vector<StEntry>& tensors() const { return header_.tensors; }
  const std::map<std::string, std::string>& metadata() const { return header_.metadata; }
  const StEntry* find(std::string_view name) const { return header_.find(name); }
  // Throws DataError naming the file unless the tensor exists.
  const StEntry& at(std::string_view name) const;
  std::span<const std::uint8_t> bytes(const StEntry& e) const;
  // The whole data section (for checksums).
  std::span<const std::uint8_t> data() const;
  // The whole file as read (to hand it to other processes, which parse() it).
  const std::vector<std::uint8_t>& raw() const { return storage_; }

 private:
  std::string source_;
  StHeader header_;
  std::vector<std::uint8_t> storage_;  // the whole file
  std::size_t data_offset_ = 0;        // of the data section in storage_
};

// A tensor to write: its bytes must hold prod(shape) elements of dtype, little-endian.
struct StTensorView {
  std::string name;
  StDType dtype = StDType::kF32;
  std::vector<std::int64_t> shape;
  std::span<const std::uint8_t> bytes;
};

// The 8-byte length and the JSON header (padded with spaces to a multiple of 8 bytes, so the data
// of every tensor is aligned for its type). Reorders `tensors` into data order: widest type first,
// then as given (so a second call keeps the order). Throws InputError for duplicate or empty names, "__metadata__" as a
// name, or a byte count that does not match the shape.
std::string encode_safetensors_header(std::vector<StTensorView>& tensors,
                                      const std::map<std::string, std::string>& metadata);
// A whole file in memory (tests, fuzz seeds); writers of large files stream instead.
std::vector<std::uint8_t> encode_safetensors(std::vector<StTensorView> tensors,
                                             const std::map<std::string, std::string>& metadata);
// Writes a file atomically (checkpoint/atomic_file.h): header, then each tensor's bytes.
void write_safetensors(const std::string& path, std::vector<StTensorView> tensors,
                       const std::map<std::string, std::string>& metadata);

}  // namespace dtrain
