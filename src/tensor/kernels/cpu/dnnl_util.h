// oneDNN plumbing shared by the fast CPU kernels: one CPU engine, a stream and a scratchpad per
// calling thread, memory descriptors for dtrain's layouts, and a thread-safe cache of primitives
// keyed by (operation, shapes, layouts, geometry, thread count).
//
// Creating a oneDNN primitive descriptor and primitive costs 0.1-1 ms (dispatching over every
// implementation, JIT-compiling the kernel), far more than a small convolution; shapes repeat
// step after step, so every primitive is built once and reused. Primitives run with a
// user-managed scratchpad (each calling thread owns a buffer that only grows), so one cached
// primitive can execute concurrently from several threads (the local-threads communicator runs
// ranks as threads of one process).
#pragma once

#include <cstddef>
#include <cstdint>
#include <dnnl.hpp>
#include <functional>
#include <memory>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "tensor/tensor.h"

namespace dtrain::cpu {

dnnl::engine& dnnl_engine();
// The calling thread's stream (oneDNN CPU streams are cheap but not meant for concurrent use).
dnnl::stream& dnnl_stream();

// A primitive_attr with the user-managed scratchpad mode.
dnnl::primitive_attr scratchpad_attr();

// The calling thread's scratchpad, at least `bytes` large (grown, never shrunk).
void* thread_scratchpad(std::size_t bytes);

// Memory descriptor of a 4-D tensor [N, C, H, W] of `type` (f32 unless named) stored in `layout`.
dnnl::memory::desc md4(std::int64_t n, std::int64_t c, std::int64_t h, std::int64_t w, Layout layout,
                       dnnl::memory::data_type type = dnnl::memory::data_type::f32);
dnnl::memory::format_tag format_tag_of(Layout layout);
dnnl::memory::desc md_of(const Tensor& t);  // 4-D tensor (or [N, C], seen as [N, C, 1, 1])
dnnl::memory::desc md1(std::int64_t n);     // 1-D f32 vector

// A dnnl::memory over a tensor's storage (no copy).
dnnl::memory mem(const dnnl::memory::desc& md, const Tensor& t);
dnnl::memory mem(const dnnl::memory::desc& md, void* p);

// Executes `p` on the calling thread's stream, adding a scratchpad of `scratch_md`'s size to args.
void execute(const dnnl::primitive& p, const dnnl::memory::desc& scratch_md,
             std::unordered_map<int, dnnl::memory> args);

// Cache key: a short sequence of integers (operation tag first).
struct CacheKey {
  std::vector<std::int64_t> v;
  bool operator==(const CacheKey&) const = default;
};
struct CacheKeyHash {
  std::size_t operator()(const CacheKey& k) const noexcept;
};

// Process-wide cache of immutable entries. Entries are built outside the lock (two threads may
// build the same entry once each; the first stored wins) and never evicted: a training run
// meets a few dozen distinct shapes.
class PrimitiveCacheBase {
 public:
  std::shared_ptr<const void> find_or_build(const CacheKey& key,
                                            const std::function<std::shared_ptr<const void>()>& build);
  std::size_t size() const;
  std::size_t misses() const;

 private:
  mutable std::mutex mu_;
  std::unordered_map<CacheKey, std::shared_ptr<const void>, CacheKeyHash> map_;
  std::size_t misses_ = 0;
};

PrimitiveCacheBase& primitive_cache();

template <typename Entry, typename Build>
std::shared_ptr<const Entry> cached(const CacheKey& key, Build&& build) {
  return std::static_pointer_cast<const Entry>(primitive_cache().find_or_build(
      key, [&]() -> std::shared_ptr<const void> { return std::make_shared<const Entry>(build()); }));
}

// Operation tags, the first element of every key.
enum class OpTag : std::int64_t {
  kConvFwd = 1,
  kConvBwdData,
  kConvBwdWeights,
  kPoolFwd,
  kPoolBwd,
  kBnFwdTraining,
  kBnFwdInference,
  kBnBwd,
  kMatmulBf16,
  kMatmulBf16ScaledToBf16,
  kConvWeightGradToBf16,
};

// The channel-blocked layout oneDNN's JIT kernels run in natively on this CPU: nChw16c where it has
// AVX-512, else nChw8c (AVX2 and older). On an AVX2 machine (AMD Zen 3), LeNet's pooling in
// nChw16c ran oneDNN's reference kernel, 150 of the 375 ms of a step, and every convolution
// reordered its activations to nChw8c and back.
Layout blocked_layout();

// The layout kernels compute in for a 4-D tensor of `channels`: blocked_layout() when the
// channels fill its blocks, else plain.
inline Layout compute_layout(std::int64_t channels) {
  const Layout blocked = blocked_layout();
  return channels % layout_block(blocked) == 0 ? blocked : Layout::kPlain;
}

}  // namespace dtrain::cpu
