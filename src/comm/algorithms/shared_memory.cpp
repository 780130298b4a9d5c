#include "comm/algorithms/shared_memory.h"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <thread>

#include "comm/reduce.h"
#include "core/error.h"

namespace dtrain::comm::detail {
namespace {

// Each rank's line in the control region: its barrier phase, where its data lies for the current
// collective (a region index, or kStaged, and the offset in this rank's part of it), and whether
// the sums it made in a scaled allreduce were all finite (written before the last barrier, read
// after it: a rank writes it again only after the next collective's first barrier, which every
// rank reaches after reading it).
struct alignas(64) ControlLine {
  std::uint64_t phase;
  std::int64_t region;
  std::uint64_t offset;
  std::uint64_t finite;
};
constexpr std::int64_t kStaged = -1;
// Elements reduced and copied out at a time: the sum stays in the L1/L2 cache for the copies.
constexpr std::size_t kChunkBytes = std::size_t{32} << 10;

ControlLine& line(const SharedRegion& control, int rank) { return *reinterpret_cast<ControlLine*>(control.base(rank)); }

std::uint64_t load_phase(const SharedRegion& control, int rank) {
  return std::atomic_ref<std::uint64_t>(line(control, rank).phase).load(std::memory_order_acquire);
}

void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#endif
}

}  // namespace

SharedMemory::~SharedMemory() = default;

bool SharedMemory::available(Transport& t, const Deadline& deadline) {
  if (!probed_) {
    control_ = t.allocate_shared(sizeof(ControlLine), deadline);
    probed_ = true;
    for (int r = 0; control_ && r < t.size(); ++r) {
      DT_CHECK(reinterpret_cast<std::uintptr_t>(control_->base(r)) % alignof(ControlLine) == 0,
               "rank {}'s shared region is not aligned to a cache line", r);
    }
  }
  return control_ != nullptr;
}

std::span<std::byte> SharedMemory::allocate(Transport& t, std::size_t bytes, const Deadline& deadline) {
  if (!available(t, deadline)) return {};
  regions_.push_back(t.allocate_shared(bytes, deadline));
  DT_CHECK(regions_.back() != nullptr, "shared memory was available for the control region only");
  return {regions_.back()->base(t.rank()), bytes};
}

std::span<std::byte> SharedMemory::allocate_common(Transport& t, int owner, std::size_t bytes,
                                                   const Deadline& deadline) {
  if (!available(t, deadline)) return {};
  regions_.push_back(t.allocate_shared(t.rank() == owner ? bytes : 0, deadline));
  DT_CHECK(regions_.back() != nullptr, "shared memory was available for the control region only");
  return {regions_.back()->base(owner), bytes};
}

void SharedMemory::abandon() {
  if (control_) control_->abandon();
  for (auto& r : regions_) r->abandon();
  if (staging_) staging_->abandon();
}

// Every rank raises its phase, then waits for every other rank's to reach it. One flag per rank
// serves every barrier: a rank already in the next barrier has a higher phase, which also passes.
void SharedMemory::barrier(Collective& c) {
  const int me = c.rank(), p = c.size();
  ++phase_;
  std::atomic_ref<std::uint64_t>(line(*control_, me).phase).store(phase_, std::memory_order_release);
  for (int r = 0; r < p; ++r) {
    for (std::uint64_t spins = 1; load_phase(*control_, r) < phase_; ++spins) {
      if (spins % 64 != 0) {
        cpu_relax();
        continue;
      }
      std::this_thread::yield();  // ranks may outnumber the cores
      if (spins % 4096 != 0) continue;
      c.transport.throw_if_aborted();
      if (c.deadline.expired()) {
        std::string late;
        int count = 0;
        for (int q = 0; q < p; ++q) {
          if (load_phase(*control_, q) >= phase_) continue;
          late += fmt::format("{}{}", count++ > 0 ? ", " : "", q);
        }
        throw CommError(fmt::format("rank {}: {} timed out after {} s waiting for rank{} {} (not in the collective)",
                                    me, c.what, c.deadline.timeout_seconds(), count > 1 ? "s" : "", late));
      }
    }
  }
}

bool SharedMemory::allreduce(Collective& c, void* data, std::size_t count, DType dtype, const float* scale,
                             bool own_block_only) {
  const int me = c.rank(), p = c.size();
  DT_CHECK(scale == nullptr || dtype == DType::kF32, "a scaled allreduce(shm) needs f32, not {}", dtype_name(dtype));
  if (p == 1 || count == 0) return scale == nullptr || scale_all_finite(static_cast<float*>(data), count, *scale);
  DT_CHECK(control_ != nullptr, "allreduce(shm) without shared memory");
  const std::size_t elem = dtype_size(dtype), bytes = count * elem;
  // Where this rank's data lies: in a region from allocate(), or staged.
  auto* mine = static_cast<std::byte*>(data);
  ControlLine& own = line(*control_, me);
  own.region = kStaged;
  own.offset = 0;
  for (std::size_t k = 0; k < regions_.size(); ++k) {
    std::byte* base = regions_[k]->base(me);
    if (mine >= base && mine + bytes <= base + regions_[k]->bytes()) {
      own.region = static_cast<std::int64_t>(k);
      own.offset = static_cast<std::uint64_t>(mine - base);
    }
  }
  barrier(c);
  bool staged = false;
  for (int r = 0; r < p; ++r) staged = staged || line(*control_, r).region == kStaged;
  if (staged) {
    // Every rank sees the same descriptors, so all of them grow the staging buffer together.
    if (!staging_ || staging_->bytes() < bytes) {
      staging_.reset();
      staging_ = c.transport.allocate_shared(bytes, c.deadline);
    }
    if (own.region == kStaged) std::memcpy(staging_->base(me), mine, bytes);
    barrier(c);
  }
  // Every rank's buffer, read from the descriptors once per call (kept across calls: no allocation).
  buffers_.resize(static_cast<std::size_t>(p));
  for (int r = 0; r < p; ++r) {
    const ControlLine& l = line(*control_, r);
    buffers_[static_cast<std::size_t>(r)] =
        l.region == kStaged ? staging_->base(r) : regions_[static_cast<std::size_t>(l.region)]->base(r) + l.offset;
  }
  std::byte* const sum = buffers_[static_cast<std::size_t>(me)];
  const Block b = block_of(count, p, me);
  const std::size_t step = std::max<std::size_t>(1, kChunkBytes / elem);
  bool finite = true;
  for (std::size_t at = b.offset; at < b.offset + b.count; at += step) {
    const std::size_t n = std::min(step, b.offset + b.count - at);
    for (int r = 0; r < p; ++r) {
      if (r != me) c.reduce(sum + at * elem, buffers_[static_cast<std::size_t>(r)] + at * elem, n, dtype);
    }
    if (scale != nullptr) finite = scale_all_finite(reinterpret_cast<float*>(sum) + at, n, *scale) && finite;
    for (int r = 0; r < p && !own_block_only; ++r) {
      if (r != me) std::memcpy(buffers_[static_cast<std::size_t>(r)] + at * elem, sum + at * elem, n * elem);
    }
  }
  own.finite = finite ? 1 : 0;
  barrier(c);
  if (own.region == kStaged) std::memcpy(mine, staging_->base(me), bytes);
  if (scale == nullptr) return true;
  for (int r = 0; r < p; ++r) finite = finite && line(*control_, r).finite != 0;
  return finite;
}

CommCost shm_allreduce_cost(int p, int rank, std::size_t count, std::size_t elem) {
  CommCost cost;
  if (p == 1 || count == 0) return cost;
  const std::uint64_t block = block_of(count, p, rank).count * elem;
  const auto peers = static_cast<std::uint64_t>(p - 1);
  cost.rounds = 2;
  cost.beta_bytes = 2 * peers * block;
  cost.bytes_reduced = peers * block;
  return cost;
}

}  // namespace dtrain::comm::detail
