#include "tensor/allocator.h"

#include <sys/mman.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <mutex>
#include <new>
#include <unordered_map>
#include <vector>

#include "core/error.h"

namespace dtrain {
namespace {

constexpr std::size_t kAlignment = 64;
constexpr std::size_t kHugePage = kHugePageBytes;
constexpr std::size_t kHugeFrom = kHugePageBytes / 2;

std::size_t round_up(std::size_t n, std::size_t to) { return (n + to - 1) / to * to; }

// Size actually reserved for a request: 64-byte granules below kHugeFrom, whole huge pages from
// there on (allocator.h).
std::size_t block_size(std::size_t bytes) {
  if (bytes == 0) bytes = kAlignment;
  return bytes >= kHugeFrom ? round_up(bytes, kHugePage) : round_up(bytes, kAlignment);
}

void* system_allocate(std::size_t size) {
  if (size >= kHugePage) {
    // A huge page backs only a 2 MiB-aligned range: map a huge page more and trim the ends (kernels
    // before 6.7 align anonymous mappings to 4 KiB only).
    void* p = mmap(nullptr, size + kHugePage, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) throw std::bad_alloc();
    auto* base = static_cast<std::byte*>(p);
    std::byte* aligned = base + (kHugePage - reinterpret_cast<std::uintptr_t>(base) % kHugePage) % kHugePage;
    const auto head = static_cast<std::size_t>(aligned - base);
    if (head > 0) munmap(base, head);
    munmap(aligned + size, kHugePage - head);
    madvise(aligned, size, MADV_HUGEPAGE);
    return aligned;
  }
  void* p = std::aligned_alloc(kAlignment, size);
  if (p == nullptr) throw std::bad_alloc();
  return p;
}

void system_free(void* p, std::size_t size) {
  if (size >= kHugePage) {
    munmap(p, size);
  } else {
    std::free(p);
  }
}

class CachingAllocator final : public Allocator {
 public:
  ~CachingAllocator() override { release_cache(); }

  void* allocate(std::size_t bytes) override {
    const std::size_t size = block_size(bytes);
    {
      std::lock_guard lock(mutex_);
      stats_.bytes_in_use += size;
      if (stats_.bytes_in_use > stats_.peak_bytes_in_use) stats_.peak_bytes_in_use = stats_.bytes_in_use;
      auto it = free_.find(size);
      if (it != free_.end() && !it->second.empty()) {
        void* p = it->second.back();
        it->second.pop_back();
        stats_.bytes_cached -= size;
        ++stats_.cache_hits;
        return p;
      }
      ++stats_.system_allocations;
    }
    return system_allocate(size);
  }

  void deallocate(void* ptr, std::size_t bytes) override {
    if (ptr == nullptr) return;
    const std::size_t size = block_size(bytes);
    std::lock_guard lock(mutex_);
    stats_.bytes_in_use -= size;
    stats_.bytes_cached += size;
    free_[size].push_back(ptr);
  }

  AllocatorStats stats() {
    std::lock_guard lock(mutex_);
    return stats_;
  }

  void release_cache() {
    std::lock_guard lock(mutex_);
    for (auto& [size, blocks] : free_) {
      for (void* p : blocks) system_free(p, size);
    }
    free_.clear();
    stats_.bytes_cached = 0;
  }

 private:
  std::mutex mutex_;
  std::unordered_map<std::size_t, std::vector<void*>> free_;
  AllocatorStats stats_;
};

CachingAllocator& caching_allocator() {
  // Never destroyed: tensors owned by static objects may be freed after main returns.
  static auto* allocator = new CachingAllocator();
  return *allocator;
}

}  // namespace

Allocator& cpu_allocator() { return caching_allocator(); }
AllocatorStats cpu_allocator_stats() { return caching_allocator().stats(); }
void cpu_allocator_release_cache() { caching_allocator().release_cache(); }

}  // namespace dtrain
