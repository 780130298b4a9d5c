// IDX files, the container of MNIST and Fashion-MNIST: a big-endian header (magic 0x0000TTDD with
// TT the element type and DD the number of dimensions, then DD uint32 extents) followed by the
// elements in row-major order. dtrain reads the unsigned-byte variant (TT = 0x08): images
// (magic 0x00000803, N x rows x cols) and labels (magic 0x00000801, N), plain or gzip-compressed.
// Every failure is a DataError that names the file and what is wrong with it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace dtrain {

inline constexpr std::uint32_t kIdxLabelsMagic = 0x00000801;
inline constexpr std::uint32_t kIdxImagesMagic = 0x00000803;
// The largest IDX file (decompressed) we accept: far above MNIST's 47 MB, far below what a lying
// header or a gzip bomb could make us allocate.
inline constexpr std::size_t kIdxMaxBytes = std::size_t{1} << 30;

struct IdxImages {
  std::int64_t count = 0;
  std::int64_t rows = 0;
  std::int64_t cols = 0;
  std::vector<std::uint8_t> pixels;  // count * rows * cols, row-major
};

struct IdxLabels {
  std::int64_t count = 0;
  std::vector<std::uint8_t> labels;
};

// Parse already-decompressed file contents; `path` names the source in messages. The parsers take
// the bytes by value and strip the header in place, so no second copy of the pixels is made.
IdxImages parse_idx_images(std::vector<std::uint8_t> bytes, const std::string& path);
IdxLabels parse_idx_labels(std::vector<std::uint8_t> bytes, const std::string& path);

// Read a file (gzip when named *.gz or starting with the gzip magic).
IdxImages read_idx_images(const std::string& path);
IdxLabels read_idx_labels(const std::string& path);

// Throws DataError naming both files unless they hold the same number of samples.
void check_idx_counts_agree(const IdxImages& images, const std::string& images_path, const IdxLabels& labels,
                            const std::string& labels_path);

// Serialise (uncompressed), for tests and tools that write IDX files.
std::vector<std::uint8_t> encode_idx_images(const IdxImages& images);
std::vector<std::uint8_t> encode_idx_labels(const IdxLabels& labels);

}  // namespace dtrain
