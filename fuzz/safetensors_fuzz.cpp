// Safetensors and checkpoint readers, from memory and (through a memfd) from a file, the way
// `--resume` and `dtrain export` read them. A DataError is the expected answer to a bad file;
// anything else is a finding. Accepted files are walked completely so out-of-range views show up.
#include <sys/mman.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "checkpoint/checkpoint.h"
#include "checkpoint/safetensors.h"
#include "core/error.h"

namespace {

void walk(const dtrain::SafetensorsFile& f) {
  std::uint64_t total = 0;
  volatile std::uint8_t sink = 0;
  for (const dtrain::StEntry& e : f.tensors()) {
    const auto bytes = f.bytes(e);
    if (bytes.size() != static_cast<std::uint64_t>(e.numel()) * dtrain::st_dtype_size(e.dtype)) __builtin_trap();
    if (!bytes.empty()) sink = sink ^ bytes.front() ^ bytes.back();
    total += bytes.size();
  }
  if (total != f.data().size()) __builtin_trap();
}

// The file path of the reader, which checks the header before it reads the data.
void read_through_file(const std::uint8_t* data, std::size_t size) {
  static const int fd = memfd_create("fuzz.safetensors", 0);
  if (fd < 0 || ftruncate(fd, 0) != 0 || pwrite(fd, data, size, 0) != static_cast<ssize_t>(size)) return;
  try {
    walk(dtrain::SafetensorsFile::read("/proc/self/fd/" + std::to_string(fd)));
  } catch (const dtrain::DataError&) {
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  try {
    walk(dtrain::SafetensorsFile::parse({data, data + size}, "fuzz.safetensors"));
  } catch (const dtrain::DataError&) {
  }
  try {
    const dtrain::Checkpoint ck = dtrain::Checkpoint::parse({data, data + size}, "fuzz.safetensors");
    (void)ck.info().config.dump();
  } catch (const dtrain::DataError&) {
  }
  read_through_file(data, size);
  return 0;
}
