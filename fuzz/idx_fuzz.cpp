// IDX reader (MNIST, Fashion-MNIST): plain or gzip bytes, parsed as images and as labels. A
// DataError is the expected answer to a bad file; anything else (a crash, a sanitizer report,
// another exception) is a finding.
#include <cstddef>
#include <cstdint>
#include <vector>

#include "core/error.h"
#include "data/file_bytes.h"
#include "data/idx.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::vector<std::uint8_t> bytes(data, data + size);
  try {
    // What read_idx_* does for a .gz file, with a smaller limit to keep each run fast.
    if (dtrain::has_gzip_magic(bytes)) bytes = dtrain::gunzip(bytes, "fuzz.gz", std::size_t{1} << 24);
  } catch (const dtrain::DataError&) {
    return 0;
  }
  try {
    dtrain::parse_idx_images(bytes, "fuzz");
  } catch (const dtrain::DataError&) {
  }
  try {
    dtrain::parse_idx_labels(bytes, "fuzz");
  } catch (const dtrain::DataError&) {
  }
  return 0;
}
