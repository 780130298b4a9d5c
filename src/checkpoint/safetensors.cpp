#include "checkpoint/safetensors.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <bit>
#include <cerrno>
#include <cstring>
#include <limits>
#include <nlohmann/json.hpp>
#include <set>
#include <system_error>

#include "checkpoint/atomic_file.h"
#include "core/error.h"

namespace dtrain {

static_assert(std::endian::native == std::endian::little,
              "safetensors data is little-endian; a big-endian port must byte-swap tensors on read and write");

namespace {

using Json = nlohmann::json;

struct DTypeInfo {
  StDType type;
  std::string_view name;
  std::size_t size;
};

constexpr std::array<DTypeInfo, 13> kDTypes{{{StDType::kBool, "BOOL", 1},
                                             {StDType::kU8, "U8", 1},
                                             {StDType::kI8, "I8", 1},
                                             {StDType::kU16, "U16", 2},
                                             {StDType::kI16, "I16", 2},
                                             {StDType::kF16, "F16", 2},
                                             {StDType::kBF16, "BF16", 2},
                                             {StDType::kU32, "U32", 4},
                                             {StDType::kI32, "I32", 4},
                                             {StDType::kF32, "F32", 4},
                                             {StDType::kU64, "U64", 8},
                                             {StDType::kI64, "I64", 8},
                                             {StDType::kF64, "F64", 8}}};

// Headers nest three deep (file, tensor, shape); anything much deeper is not a header.
constexpr int kMaxJsonDepth = 8;
// PyTorch's own limit on tensor rank.
constexpr std::size_t kMaxRank = 64;
constexpr std::string_view kMetadataKey = "__metadata__";

const DTypeInfo& info(StDType t) {
  for (const auto& d : kDTypes) {
    if (d.type == t) return d;
  }
  throw InternalError(fmt::format("unknown safetensors dtype {}", static_cast<int>(t)));
}

std::uint64_t read_le64(const std::uint8_t* p) {
  std::uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | p[i];
  return v;
}

// Non-negative integer that fits in 64 bits, or nothing (negative, fractional, too large).
std::optional<std::uint64_t> as_count(const Json& j) {
  if (j.is_number_unsigned()) return j.get<std::uint64_t>();
  if (j.is_number_integer() && j.get<std::int64_t>() >= 0) return static_cast<std::uint64_t>(j.get<std::int64_t>());
  return std::nullopt;
}

StEntry parse_entry(const std::string& name, const Json& j, std::uint64_t data_bytes, const std::string& source) {
  const std::string quoted = Json(name).dump();
  auto fail = [&](const std::string& what) {
    return DataError(fmt::format("{}: tensor {}: {}", source, quoted, what));
  };
  if (name.empty()) throw DataError(fmt::format("{}: a tensor has an empty name", source));
  if (!j.is_object()) throw fail("entry is not an object with dtype, shape and data_offsets");
  for (const auto& [key, value] : j.items()) {
    if (key != "dtype" && key != "shape" && key != "data_offsets") {
      throw fail(fmt::format("unexpected field {}; entries hold dtype, shape and data_offsets", Json(key).dump()));
    }
  }
  if (!j.contains("dtype") || !j.contains("shape") || !j.contains("data_offsets")) {
    throw fail("entry lacks one of dtype, shape and data_offsets");
  }
  StEntry e;
  e.name = name;
  const Json& dtype = j.at("dtype");
  if (!dtype.is_string()) throw fail("dtype is not a string");
  const auto parsed = parse_st_dtype(dtype.get_ref<const std::string&>());
  if (!parsed) throw fail(fmt::format("unknown dtype {}", dtype.dump()));
  e.dtype = *parsed;

  const Json& shape = j.at("shape");
  if (!shape.is_array()) throw fail("shape is not an array");
  if (shape.size() > kMaxRank) throw fail(fmt::format("shape has {} dimensions, more than {}", shape.size(), kMaxRank));
  // Products are checked before they are formed: the non-zero dimensions multiply to at most
  // 2^63 - 1 (so numel() cannot overflow in any order), and a tensor with elements must fit the
  // data section.
  std::uint64_t numel = 1, nonzero = 1;
  for (const Json& d : shape) {
    const auto n = as_count(d);
    if (!n) throw fail(fmt::format("shape {} holds {}, not a non-negative integer", shape.dump(), d.dump()));
    if (*n == 0) {
      numel = 0;
    } else {
      if (nonzero > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max()) / *n) {
        throw fail(fmt::format("shape {} has more than 2^63 elements", shape.dump()));
      }
      nonzero *= *n;
    }
    e.shape.push_back(static_cast<std::int64_t>(*n));
  }
  if (numel != 0) numel = nonzero;
  const std::uint64_t size = info(e.dtype).size;
  if (numel > data_bytes / size) {
    throw fail(fmt::format("shape {} of {} needs {} elements x {} bytes, more than the {} bytes of data in the file",
                           shape.dump(), dtype.get_ref<const std::string&>(), numel, size, data_bytes));
  }
  const std::uint64_t nbytes = numel * size;

  const Json& offsets = j.at("data_offsets");
  if (!offsets.is_array() || offsets.size() != 2) throw fail("data_offsets is not an array [begin, end]");
  const auto begin = as_count(offsets[0]), end = as_count(offsets[1]);
  if (!begin || !end) throw fail(fmt::format("data_offsets {} are not non-negative integers", offsets.dump()));
  if (*begin > *end) throw fail(fmt::format("data_offsets {} end before they begin", offsets.dump()));
  if (*end > data_bytes) {
    throw fail(fmt::format("data_offsets {} reach past the {} bytes of data in the file (truncated?)", offsets.dump(),
                           data_bytes));
  }
  if (*end - *begin != nbytes) {
    throw fail(fmt::format("data_offsets {} span {} bytes, but shape {} of {} needs {}", offsets.dump(), *end - *begin,
                           shape.dump(), dtype.get_ref<const std::string&>(), nbytes));
  }
  e.begin = *begin;
  e.end = *end;
  return e;
}

Json parse_json(std::string_view text, const std::string& source) {
  if (text.empty() || text.front() != '{') {
    throw DataError(fmt::format("{}: the header does not start with '{{'; not a safetensors file", source));
  }
  const Json::parser_callback_t limit_depth = [&source](int depth, Json::parse_event_t, Json&) {
    if (depth > kMaxJsonDepth) {
      throw DataError(
          fmt::format("{}: the header nests deeper than {} levels; not a safetensors header", source, kMaxJsonDepth));
    }
    return true;
  };
  try {
    return Json::parse(text.begin(), text.end(), limit_depth);
  } catch (const Json::exception& e) {
    throw DataError(fmt::format("{}: the header is not valid JSON ({}); the file is corrupt", source, e.what()));
  }
}

int open_file(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    const int err = errno;
    if (err == ENOENT) throw DataError(fmt::format("{}: no such file", path));
    throw DataError(fmt::format("{}: cannot open: {}", path, std::generic_category().message(err)));
  }
  return fd;
}

struct FdCloser {
  int fd;
  ~FdCloser() { ::close(fd); }
};

// Reads exactly n bytes at offset, or throws naming the file.
void read_at(int fd, void* buf, std::size_t n, std::uint64_t offset, const std::string& path) {
  auto* p = static_cast<char*>(buf);
  while (n > 0) {
    const ssize_t got = ::pread(fd, p, n, static_cast<off_t>(offset));
    if (got < 0) {
      if (errno == EINTR) continue;
      throw DataError(fmt::format("{}: read failed: {}", path, std::generic_category().message(errno)));
    }
    if (got == 0) throw DataError(fmt::format("{}: the file shrank while it was read", path));
    p += got;
    n -= static_cast<std::size_t>(got);
    offset += static_cast<std::uint64_t>(got);
  }
}

// Header length from the first 8 bytes of a file of file_bytes bytes, checked against both.
std::uint64_t checked_header_length(const std::uint8_t* first8, std::uint64_t file_bytes, const std::string& source) {
  const std::uint64_t n = read_le64(first8);
  if (n > kSafetensorsMaxHeaderBytes) {
    throw DataError(
        fmt::format("{}: the header claims {} bytes, more than the {} a safetensors header may have; "
                    "not a safetensors file or corrupt",
                    source, n, kSafetensorsMaxHeaderBytes));
  }
  if (n > file_bytes - 8) {
    throw DataError(
        fmt::format("{}: the header claims {} bytes but only {} follow the length field; the file is "
                    "truncated or not a safetensors file",
                    source, n, file_bytes - 8));
  }
  return n;
}

std::string too_short(const std::string& source, std::uint64_t size) {
  return fmt::format(
      "{}: the file is {} bytes, shorter than the 8-byte header length; truncated or not a safetensors "
      "file",
      source, size);
}

}  // namespace

std::size_t st_dtype_size(StDType t) { return info(t).size; }
std::string_view st_dtype_name(StDType t) { return info(t).name; }

std::optional<StDType> parse_st_dtype(std::string_view name) {
  for (const auto& d : kDTypes) {
    if (d.name == name) return d.type;
  }
  return std::nullopt;
}

std::int64_t StEntry::numel() const {
  std::int64_t n = 1;
  for (const std::int64_t d : shape) n *= d;
  return n;
}

const StEntry* StHeader::find(std::string_view name) const {
  for (const StEntry& e : tensors) {
    if (e.name == name) return &e;
  }
  return nullptr;
}

StHeader parse_safetensors_header(std::string_view json_text, std::uint64_t data_bytes, const std::string& source) {
  const Json j = parse_json(json_text, source);
  if (!j.is_object()) throw DataError(fmt::format("{}: the header is not a JSON object", source));
  StHeader h;
  h.data_bytes = data_bytes;
  for (const auto& [key, value] : j.items()) {
    if (key == kMetadataKey) {
      if (!value.is_object()) throw DataError(fmt::format("{}: __metadata__ is not an object of strings", source));
      for (const auto& [mk, mv] : value.items()) {
        if (!mv.is_string()) {
          throw DataError(fmt::format("{}: __metadata__ value of {} is not a string", source, Json(mk).dump()));
        }
        h.metadata.emplace(mk, mv.get<std::string>());
      }
      continue;
    }
    h.tensors.push_back(parse_entry(key, value, data_bytes, source));
  }
  // The tensors must tile the data section: sorted by offset, each begins where the last ended.
  std::sort(h.tensors.begin(), h.tensors.end(),
            [](const StEntry& a, const StEntry& b) { return a.begin != b.begin ? a.begin < b.begin : a.end < b.end; });
  std::uint64_t expected = 0;
  for (const StEntry& e : h.tensors) {
    if (e.begin != expected) {
      throw DataError(
          fmt::format("{}: tensor {} starts at byte {} of the data, but the previous one ends at {} ({}); "
                      "the file is corrupt",
                      source, Json(e.name).dump(), e.begin, expected, e.begin < expected ? "they overlap" : "a gap"));
    }
    expected = e.end;
  }
  if (expected != data_bytes) {
    throw DataError(
        fmt::format("{}: the tensors cover {} bytes of data but {} follow the header; the file is "
                    "corrupt or has trailing bytes",
                    source, expected, data_bytes));
  }
  return h;
}

SafetensorsFile SafetensorsFile::read(const std::string& path) {
  const int fd = open_file(path);
  const FdCloser closer{fd};
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    throw DataError(fmt::format("{}: cannot get the file size: {}", path, std::generic_category().message(errno)));
  }
  if (!S_ISREG(st.st_mode)) throw DataError(fmt::format("{}: not a regular file", path));
  const auto size = static_cast<std::uint64_t>(st.st_size);
  if (size < 8) throw DataError(too_short(path, size));
  std::array<std::uint8_t, 8> first{};
  read_at(fd, first.data(), first.size(), 0, path);
  const std::uint64_t n = checked_header_length(first.data(), size, path);
  std::string json(static_cast<std::size_t>(n), '\0');
  read_at(fd, json.data(), json.size(), 8, path);
  SafetensorsFile f;
  f.source_ = path;
  f.header_ = parse_safetensors_header(json, size - 8 - n, path);
  // Only now, with every claim checked against the file's real size, is the data read.
  f.data_offset_ = static_cast<std::size_t>(8 + n);
  f.storage_.resize(f.data_offset_ + static_cast<std::size_t>(f.header_.data_bytes));
  std::memcpy(f.storage_.data(), first.data(), first.size());
  std::memcpy(f.storage_.data() + 8, json.data(), json.size());
  read_at(fd, f.storage_.data() + f.data_offset_, static_cast<std::size_t>(f.header_.data_bytes), 8 + n, path);
  return f;
}

SafetensorsFile SafetensorsFile::parse(std::vector<std::uint8_t> bytes, const std::string& source) {
  if (bytes.size() < 8) throw DataError(too_short(source, bytes.size()));
  const std::uint64_t n = checked_header_length(bytes.data(), bytes.size(), source);
  SafetensorsFile f;
  f.source_ = source;
  const std::string_view json(reinterpret_cast<const char*>(bytes.data()) + 8, static_cast<std::size_t>(n));
  f.header_ = parse_safetensors_header(json, bytes.size() - 8 - n, source);
  f.data_offset_ = static_cast<std::size_t>(8 + n);
  f.storage_ = std::move(bytes);
  return f;
}

const StEntry& SafetensorsFile::at(std::string_view name) const {
  const StEntry* e = find(name);
  if (e == nullptr) throw DataError(fmt::format("{}: no tensor named {}", source_, Json(std::string(name)).dump()));
  return *e;
}

std::span<const std::uint8_t> SafetensorsFile::bytes(const StEntry& e) const {
  return data().subspan(static_cast<std::size_t>(e.begin), static_cast<std::size_t>(e.nbytes()));
}

std::span<const std::uint8_t> SafetensorsFile::data() const {
  return std::span<const std::uint8_t>(storage_).subspan(data_offset_);
}

std::string encode_safetensors_header(std::vector<StTensorView>& tensors,
                                      const std::map<std::string, std::string>& metadata) {
  std::set<std::string> names;
  for (const StTensorView& t : tensors) {
    if (t.name.empty() || t.name == kMetadataKey) {
      throw InputError(fmt::format("cannot write a tensor named '{}' to a safetensors file", t.name));
    }
    if (!names.insert(t.name).second) throw InputError(fmt::format("two tensors are named '{}'", t.name));
    std::uint64_t numel = 1;
    for (const std::int64_t d : t.shape) {
      if (d < 0) throw InputError(fmt::format("tensor '{}' has a negative dimension", t.name));
      numel *= static_cast<std::uint64_t>(d);
    }
    if (numel * st_dtype_size(t.dtype) != t.bytes.size()) {
      throw InputError(fmt::format("tensor '{}': {} bytes given for {} elements of {}", t.name, t.bytes.size(), numel,
                                   st_dtype_name(t.dtype)));
    }
  }
  // Widest elements first keeps every tensor aligned for its type once the data section is.
  std::stable_sort(tensors.begin(), tensors.end(), [](const StTensorView& a, const StTensorView& b) {
    return st_dtype_size(a.dtype) > st_dtype_size(b.dtype);
  });
  Json header = Json::object();
  std::uint64_t offset = 0;
  for (const StTensorView& t : tensors) {
    header[t.name] = {
        {"dtype", st_dtype_name(t.dtype)}, {"shape", t.shape}, {"data_offsets", {offset, offset + t.bytes.size()}}};
    offset += t.bytes.size();
  }
  if (!metadata.empty()) header[std::string(kMetadataKey)] = metadata;
  std::string json = header.dump();
  json.append((8 - json.size() % 8) % 8, ' ');
  std::string out(8, '\0');
  std::uint64_t n = json.size();
  for (int i = 0; i < 8; ++i, n >>= 8) out[static_cast<std::size_t>(i)] = static_cast<char>(n & 0xff);
  return out + json;
}

std::vector<std::uint8_t> encode_safetensors(std::vector<StTensorView> tensors,
                                             const std::map<std::string, std::string>& metadata) {
  const std::string header = encode_safetensors_header(tensors, metadata);
  std::vector<std::uint8_t> out(header.begin(), header.end());
  for (const StTensorView& t : tensors) out.insert(out.end(), t.bytes.begin(), t.bytes.end());
  return out;
}

void write_safetensors(const std::string& path, std::vector<StTensorView> tensors,
                       const std::map<std::string, std::string>& metadata) {
  const std::string header = encode_safetensors_header(tensors, metadata);
  AtomicFile file(path);
  file.write(header.data(), header.size());
  for (const StTensorView& t : tensors) file.write(t.bytes.data(), t.bytes.size());
  file.commit();
}

}  // namespace dtrain
