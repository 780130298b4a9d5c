// CIFAR-10 batch reader. A DataError is the expected answer to a bad file; anything else is a
// finding.
#include <cstddef>
#include <cstdint>
#include <vector>

#include "core/error.h"
#include "data/cifar10.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::vector<std::uint8_t> bytes(data, data + size);
  try {
    const dtrain::CifarImages images = dtrain::parse_cifar10_batch(bytes, "fuzz.bin");
    // The parsed records must be what the bytes say.
    if (images.pixels.size() != static_cast<std::size_t>(images.count) * dtrain::kCifarImageBytes) __builtin_trap();
    for (const std::int32_t label : images.labels) {
      if (label < 0 || label >= dtrain::kCifarClasses) __builtin_trap();
    }
  } catch (const dtrain::DataError&) {
  }
  return 0;
}
