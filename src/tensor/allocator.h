// Host memory for tensors. First touch of a fresh 4 KiB page costs about 11 us on the machines
// dtrain is developed on, and glibc malloc maps and unmaps large blocks on every call, so a
// training step that allocates its activations afresh spends more time faulting pages than
// computing. The caching allocator keeps freed blocks in exact-size bins and hands them back on
// the next step (shapes repeat step after step); blocks of 2 MiB and more are mapped with
// transparent huge pages, which cut the first-touch cost about tenfold.
#pragma once

#include <cstddef>

namespace dtrain {

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
