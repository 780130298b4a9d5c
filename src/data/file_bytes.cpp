#include "data/file_bytes.h"

#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdio>
#include <filesystem>
#include <limits>
#include <memory>
#include <system_error>

#include "core/error.h"

namespace dtrain {
namespace {

// Deflate cannot expand data by more than about 1032:1, so a compressed size bounds the honest
// output size: a gzip trailer that claims more is lying and must not size an allocation.
constexpr std::size_t kMaxDeflateRatio = 1032;

struct FileCloser {
  void operator()(std::FILE* f) const { std::fclose(f); }
};

struct InflateGuard {
  z_stream* zs;
  ~InflateGuard() { inflateEnd(zs); }
};

bool ends_with(const std::string& s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

}  // namespace

std::string format_bytes(std::size_t bytes) {
  if (bytes >= (std::size_t{1} << 30)) return fmt::format("{:.1f} GiB", static_cast<double>(bytes) / (1 << 30));
  if (bytes >= (std::size_t{1} << 20)) return fmt::format("{:.1f} MiB", static_cast<double>(bytes) / (1 << 20));
  return fmt::format("{} bytes", bytes);
}

std::vector<std::uint8_t> read_file_bytes(const std::string& path, std::size_t max_bytes) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::file_status st = fs::status(path, ec);
  if (!fs::exists(st)) throw DataError(fmt::format("{}: no such file", path));
  if (!fs::is_regular_file(st)) throw DataError(fmt::format("{}: not a regular file", path));
  const std::uintmax_t size = fs::file_size(path, ec);
  if (ec) throw DataError(fmt::format("{}: cannot get the file size: {}", path, ec.message()));
  if (size > max_bytes) {
    throw DataError(fmt::format("{}: file is {}, more than the {} this kind of file may have", path, format_bytes(size),
                                format_bytes(max_bytes)));
  }
  std::unique_ptr<std::FILE, FileCloser> f(std::fopen(path.c_str(), "rb"));
  if (!f) throw DataError(fmt::format("{}: cannot open: {}", path, std::generic_category().message(errno)));
  std::vector<std::uint8_t> bytes(static_cast<std::size_t>(size));
  const std::size_t got = bytes.empty() ? 0 : std::fread(bytes.data(), 1, bytes.size(), f.get());
  if (got != bytes.size()) {
    // A file that shrank while we read it, or an I/O error.
    throw DataError(fmt::format("{}: read {} of {} bytes: {}", path, got, bytes.size(),
                                std::ferror(f.get()) ? std::generic_category().message(errno) : "file shrank"));
  }
  return bytes;
}

bool has_gzip_magic(std::span<const std::uint8_t> bytes) {
  return bytes.size() >= 2 && bytes[0] == 0x1f && bytes[1] == 0x8b;
}

Inflated gunzip_prefix(std::span<const std::uint8_t> compressed, const std::string& path, std::size_t max_bytes) {
  DT_CHECK_LT(max_bytes, std::numeric_limits<std::size_t>::max() / 2);  // room for the probe byte
  if (compressed.empty()) throw DataError(fmt::format("{}: empty file, expected gzip data", path));
  if (compressed.size() < 2) throw DataError(fmt::format("{}: truncated gzip file of 1 byte", path));
  if (!has_gzip_magic(compressed)) {
    throw DataError(fmt::format("{}: not a gzip file (starts with 0x{:02x}{:02x}, gzip starts with 0x1f8b)", path,
                                compressed[0], compressed[1]));
  }
  z_stream zs{};
  if (inflateInit2(&zs, 16 + MAX_WBITS) != Z_OK) {  // 16: expect the gzip wrapper, check its CRC
    throw InternalError(fmt::format("{}: zlib inflateInit2 failed", path));
  }
  InflateGuard guard{&zs};

  // The trailer's ISIZE (uncompressed size mod 2^32) is a good first capacity when honest; it is
  // capped by what the compressed size can possibly hold and by the caller's limit.
  std::size_t capacity = 1 << 16;
  if (compressed.size() >= 18) {
    const std::uint8_t* t = compressed.data() + compressed.size() - 4;
    const std::size_t isize = t[0] | (t[1] << 8) | (t[2] << 16) | (static_cast<std::size_t>(t[3]) << 24);
    capacity = std::max(capacity, std::min({isize, compressed.size() * kMaxDeflateRatio, max_bytes}));
  }
  // One byte past the limit lets us tell "exactly max_bytes" from "more than max_bytes".
  capacity = std::min(capacity, max_bytes + 1);
  std::vector<std::uint8_t> out(capacity);
  std::size_t produced = 0;
  std::size_t fed = 0;  // compressed bytes handed to zlib so far
  bool truncated = false;

  for (;;) {
    if (zs.avail_in == 0 && fed < compressed.size()) {
      // avail_in is 32-bit: feed large inputs in pieces.
      const std::size_t piece = std::min<std::size_t>(compressed.size() - fed, UINT_MAX);
      zs.next_in = const_cast<Bytef*>(compressed.data() + fed);  // zlib's API is not const-correct
      zs.avail_in = static_cast<uInt>(piece);
      fed += piece;
    }
    if (produced == out.size()) {
      if (out.size() > max_bytes) break;  // the probe byte arrived: there is more
      out.resize(std::min(out.size() * 2, max_bytes + 1));
    }
    const std::size_t room = std::min<std::size_t>(out.size() - produced, UINT_MAX);
    zs.next_out = out.data() + produced;
    zs.avail_out = static_cast<uInt>(room);
    const int ret = inflate(&zs, Z_NO_FLUSH);
    produced += room - zs.avail_out;
    const std::size_t consumed = fed - zs.avail_in;

    if (ret == Z_STREAM_END) {
      if (consumed == compressed.size()) break;
      // Another gzip member may follow (as `cat a.gz b.gz` makes); anything else is junk.
      if (!has_gzip_magic(compressed.subspan(consumed))) {
        throw DataError(
            fmt::format("{}: {} bytes of junk after the end of the gzip stream", path, compressed.size() - consumed));
      }
      inflateReset(&zs);
      continue;
    }
    if (ret == Z_DATA_ERROR || ret == Z_NEED_DICT || ret == Z_STREAM_ERROR) {
      throw DataError(fmt::format("{}: corrupt gzip stream near compressed byte {}: {}", path, consumed,
                                  zs.msg ? zs.msg : "invalid data"));
    }
    if (ret == Z_MEM_ERROR) throw DataError(fmt::format("{}: out of memory while decompressing", path));
    // Z_OK or Z_BUF_ERROR: either the output is full (grow it and go on) or the input ran out
    // before the end-of-stream marker and the CRC trailer.
    if (zs.avail_out != 0 && zs.avail_in == 0 && fed == compressed.size()) {
      truncated = true;
      break;
    }
  }
  Inflated result;
  result.more = produced > max_bytes;
  result.truncated = truncated;
  out.resize(std::min(produced, max_bytes));
  out.shrink_to_fit();
  result.bytes = std::move(out);
  return result;
}

std::vector<std::uint8_t> gunzip(std::span<const std::uint8_t> compressed, const std::string& path,
                                 std::size_t max_bytes) {
  Inflated r = gunzip_prefix(compressed, path, max_bytes);
  if (r.truncated) {
    throw DataError(
        fmt::format("{}: truncated gzip stream: the {} compressed bytes end before the end of the stream "
                    "({} bytes decompressed)",
                    path, compressed.size(), r.bytes.size()));
  }
  if (r.more) {
    throw DataError(fmt::format("{}: decompresses to more than {}, the most this kind of file may hold", path,
                                format_bytes(max_bytes)));
  }
  return std::move(r.bytes);
}

bool is_gzip_file(const std::string& path, std::span<const std::uint8_t> bytes) {
  return ends_with(path, ".gz") || has_gzip_magic(bytes);
}

}  // namespace dtrain
