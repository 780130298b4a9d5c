#include "data/idx.h"

#include <limits>

#include "core/error.h"
#include "data/file_bytes.h"

namespace dtrain {
namespace {

std::uint32_t read_be32(const std::uint8_t* p) {
  return (static_cast<std::uint32_t>(p[0]) << 24) | (static_cast<std::uint32_t>(p[1]) << 16) |
         (static_cast<std::uint32_t>(p[2]) << 8) | static_cast<std::uint32_t>(p[3]);
}

void write_be32(std::vector<std::uint8_t>& out, std::uint64_t v) {
  if (v > std::numeric_limits<std::uint32_t>::max()) {
    throw InputError(fmt::format("IDX extent {} does not fit the format's 32-bit field", v));
  }
  for (int shift = 24; shift >= 0; shift -= 8) out.push_back(static_cast<std::uint8_t>(v >> shift));
}

std::string describe_magic(std::uint32_t magic) {
  if (magic == kIdxImagesMagic) return "IDX ubyte images";
  if (magic == kIdxLabelsMagic) return "IDX ubyte labels";
  if ((magic >> 16) != 0) return "not an IDX file";
  const char* type = nullptr;
  switch ((magic >> 8) & 0xff) {
    case 0x08:
      type = "unsigned byte";
      break;
    case 0x09:
      type = "signed byte";
      break;
    case 0x0b:
      type = "int16";
      break;
    case 0x0c:
      type = "int32";
      break;
    case 0x0d:
      type = "float32";
      break;
    case 0x0e:
      type = "float64";
      break;
    default:
      return "not an IDX file";
  }
  return fmt::format("IDX {} with {} dimensions", type, magic & 0xff);
}

struct IdxHeader {
  std::vector<std::uint64_t> dims;
  std::size_t bytes = 0;      // header size
  std::uint64_t payload = 0;  // bytes of elements the header claims (saturated at UINT64_MAX)
  std::string claim;          // "60000x28x28 = 47040000 bytes of pixels", for messages
};

// Product of the extents, saturated at UINT64_MAX (three 32-bit extents can overflow 64 bits).
std::uint64_t saturating_product(const std::vector<std::uint64_t>& dims) {
  std::uint64_t p = 1;
  for (std::uint64_t d : dims) {
    if (d != 0 && p > std::numeric_limits<std::uint64_t>::max() / d) return std::numeric_limits<std::uint64_t>::max();
    p *= d;
  }
  return p;
}

// Validates magic, header length and extents; the payload is checked by check_payload.
IdxHeader parse_header(std::span<const std::uint8_t> bytes, const std::string& path, std::uint32_t expected) {
  const std::size_t ndims = expected & 0xff;
  const char* what = expected == kIdxImagesMagic ? "IDX ubyte images" : "IDX ubyte labels";
  if (bytes.size() < 4) {
    throw DataError(
        fmt::format("{}: too short for an IDX header: {} bytes, the magic alone needs 4", path, bytes.size()));
  }
  const std::uint32_t magic = read_be32(bytes.data());
  if (magic != expected) {
    std::string hint;
    if (magic == kIdxImagesMagic || magic == kIdxLabelsMagic) hint = "; images and labels files swapped?";
    throw DataError(fmt::format("{}: bad magic 0x{:08x} ({}), expected 0x{:08x} ({}){}", path, magic,
                                describe_magic(magic), expected, what, hint));
  }
  IdxHeader h;
  h.bytes = 4 + 4 * ndims;
  if (bytes.size() < h.bytes) {
    throw DataError(fmt::format("{}: too short for an IDX header: {} bytes, the magic and {} dimensions need {}", path,
                                bytes.size(), ndims, h.bytes));
  }
  for (std::size_t d = 0; d < ndims; ++d) h.dims.push_back(read_be32(bytes.data() + 4 + 4 * d));
  h.payload = saturating_product(h.dims);
  const std::string size =
      h.payload == std::numeric_limits<std::uint64_t>::max() ? "more than 2^64" : fmt::format("{}", h.payload);
  if (expected == kIdxImagesMagic) {
    const std::string dims = fmt::format("{}x{}x{}", h.dims[0], h.dims[1], h.dims[2]);
    if (h.dims[1] == 0 || h.dims[2] == 0) {
      throw DataError(fmt::format("{}: header says {} images: rows and columns must be at least 1", path, dims));
    }
    h.claim = fmt::format("{} = {} bytes of pixels", dims, size);
  } else {
    h.claim = fmt::format("{} labels = {} bytes", h.dims[0], size);
  }
  if (h.payload > kIdxMaxBytes - h.bytes) {
    throw DataError(fmt::format("{}: header says {}, more than the {} limit for IDX files; corrupt header?", path,
                                h.claim, format_bytes(kIdxMaxBytes)));
  }
  return h;
}

// Checks that the payload after the header has exactly the claimed size, then strips the header.
void check_payload(std::vector<std::uint8_t>& bytes, const IdxHeader& h, const std::string& path) {
  const std::uint64_t held = bytes.size() - h.bytes;
  if (held < h.payload) {
    throw DataError(fmt::format("{}: truncated: header says {}, file holds {}", path, h.claim, held));
  }
  if (held > h.payload) {
    throw DataError(fmt::format("{}: header says {}, but the file holds {} ({} bytes too many)", path, h.claim, held,
                                held - h.payload));
  }
  bytes.erase(bytes.begin(), bytes.begin() + static_cast<std::ptrdiff_t>(h.bytes));
}

// The decompressed contents of an IDX file. For gzip files the header is decoded first and the
// rest only up to the size it claims, so a stream that inflates to more (a gzip bomb behind a
// plausible header) costs no more memory than the header's honest claim.
std::vector<std::uint8_t> read_idx_bytes(const std::string& path, std::uint32_t expected) {
  // A gzip file can be slightly larger than its content (stored blocks), never much more.
  std::vector<std::uint8_t> file = read_file_bytes(path, kIdxMaxBytes + kIdxMaxBytes / 256);
  if (!is_gzip_file(path, file)) return file;
  const std::size_t header_bytes = 4 + 4 * (expected & 0xff);
  const Inflated head = gunzip_prefix(file, path, header_bytes);
  if (head.truncated && head.bytes.size() < header_bytes) {
    throw DataError(fmt::format("{}: truncated: the gzip stream ends after {} bytes, inside the {}-byte IDX header",
                                path, head.bytes.size(), header_bytes));
  }
  const IdxHeader h = parse_header(head.bytes, path, expected);
  Inflated all = gunzip_prefix(file, path, h.bytes + h.payload);
  if (all.more) {
    throw DataError(fmt::format("{}: header says {}, but the file holds more than that", path, h.claim));
  }
  if (all.truncated) {
    const std::size_t held = all.bytes.size() - h.bytes;
    throw DataError(fmt::format(
        "{}: truncated: header says {}, file holds {}{}", path, h.claim, held,
        held == h.payload ? " and then ends inside the gzip trailer" : " before the gzip stream is cut off"));
  }
  return std::move(all.bytes);
}

}  // namespace

IdxImages parse_idx_images(std::vector<std::uint8_t> bytes, const std::string& path) {
  const IdxHeader h = parse_header(bytes, path, kIdxImagesMagic);
  check_payload(bytes, h, path);
  IdxImages out;
  out.count = static_cast<std::int64_t>(h.dims[0]);
  out.rows = static_cast<std::int64_t>(h.dims[1]);
  out.cols = static_cast<std::int64_t>(h.dims[2]);
  out.pixels = std::move(bytes);
  return out;
}

IdxLabels parse_idx_labels(std::vector<std::uint8_t> bytes, const std::string& path) {
  const IdxHeader h = parse_header(bytes, path, kIdxLabelsMagic);
  check_payload(bytes, h, path);
  IdxLabels out;
  out.count = static_cast<std::int64_t>(h.dims[0]);
  out.labels = std::move(bytes);
  return out;
}

IdxImages read_idx_images(const std::string& path) {
  return parse_idx_images(read_idx_bytes(path, kIdxImagesMagic), path);
}

IdxLabels read_idx_labels(const std::string& path) {
  return parse_idx_labels(read_idx_bytes(path, kIdxLabelsMagic), path);
}

void check_idx_counts_agree(const IdxImages& images, const std::string& images_path, const IdxLabels& labels,
                            const std::string& labels_path) {
  if (images.count != labels.count) {
    throw DataError(fmt::format("{} holds {} images but {} holds {} labels; the files must come from the same split",
                                images_path, images.count, labels_path, labels.count));
  }
}

std::vector<std::uint8_t> encode_idx_images(const IdxImages& images) {
  const auto n = static_cast<std::size_t>(images.count * images.rows * images.cols);
  if (images.pixels.size() != n) {
    throw InputError(fmt::format("IDX images {}x{}x{} need {} pixels, got {}", images.count, images.rows, images.cols,
                                 n, images.pixels.size()));
  }
  std::vector<std::uint8_t> out;
  out.reserve(16 + n);
  write_be32(out, kIdxImagesMagic);
  write_be32(out, static_cast<std::uint64_t>(images.count));
  write_be32(out, static_cast<std::uint64_t>(images.rows));
  write_be32(out, static_cast<std::uint64_t>(images.cols));
  out.insert(out.end(), images.pixels.begin(), images.pixels.end());
  return out;
}

std::vector<std::uint8_t> encode_idx_labels(const IdxLabels& labels) {
  if (labels.labels.size() != static_cast<std::size_t>(labels.count)) {
    throw InputError(fmt::format("IDX labels: count {} but {} labels", labels.count, labels.labels.size()));
  }
  std::vector<std::uint8_t> out;
  out.reserve(8 + labels.labels.size());
  write_be32(out, kIdxLabelsMagic);
  write_be32(out, static_cast<std::uint64_t>(labels.count));
  out.insert(out.end(), labels.labels.begin(), labels.labels.end());
  return out;
}

}  // namespace dtrain
