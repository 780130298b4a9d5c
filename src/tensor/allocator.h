// Host memory for tensors. First touch of a fresh 4 KiB page costs about 11 us on the machines
// dtrain is developed on, and glibc malloc maps and unmaps large blocks on every call, so a
// training step that allocates its activations afresh spends more time faulting pages than
// computing. The caching allocator keeps freed blocks in exact-size bins and hands them back on
// the next step (shapes repeat step after step). Blocks of 1 MiB and more are whole transparent
// huge pages, 2 MiB-aligned: they cut the first-touch cost about tenfold, and a gradient that
// size may be allreduced where backward left it, out of pages another rank copies from (below).
// A block of 1-2 MiB takes up to twice its size; smaller ones stay 64-byte granules.
#pragma once

#include <cstddef>

namespace dtrain {

inline constexpr std::size_t kHugePageBytes = std::size_t{2} << 20;

// `bytes` rounded up to whole huge pages, for buffers that other processes read and write through
// the transport: Open MPI's same-host single copy (CMA, process_vm_readv) pins the peer's pages
// one by one, and over 2 MiB pages it moves 3-4x the bytes per second it moves over 4 KiB ones
// (a 1 MiB exchange between two ranks of the development VM: 21 us against 67 us; mlp's 1 MiB
// and 1.5 MiB gradient allreduces in a training step: 56 and 81 us against 113 and 162 us).
inline std::size_t huge_page_rounded(std::size_t bytes) {
  return (bytes + kHugePageBytes - 1) / kHugePageBytes * kHugePageBytes;
}

class Allocator {
 public:
  virtual ~Allocator() = default;
  virtual void* allocate(std::size_t bytes) = 0;
  virtual void deallocate(void* ptr, std::size_t bytes) = 0;
};

struct AllocatorStats {
  std::size_t bytes_in_use = 0;       // handed out and not yet returned
  std::size_t peak_bytes_in_use = 0;  // maximum of bytes_in_use
  std::size_t bytes_cached = 0;       // returned and kept for reuse
  std::size_t system_allocations = 0;  // blocks obtained from the system (cache misses)
  std::size_t cache_hits = 0;
};

// The process-wide caching allocator for CPU tensors (thread-safe).
Allocator& cpu_allocator();
AllocatorStats cpu_allocator_stats();
// Returns every cached block to the system.
void cpu_allocator_release_cache();

}  // namespace dtrain
