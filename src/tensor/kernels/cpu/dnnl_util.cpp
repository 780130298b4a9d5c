#include "tensor/kernels/cpu/dnnl_util.h"

#include <omp.h>

#include "tensor/allocator.h"
#include "tensor/kernels/cpu/cpu_backend.h"

namespace dtrain::cpu {
namespace {

using tag = dnnl::memory::format_tag;
using dt = dnnl::memory::data_type;

// A growing buffer from the caching allocator (huge pages from 1 MiB), returned at thread exit.
struct Scratchpad {
  void* ptr = nullptr;
  std::size_t bytes = 0;
  ~Scratchpad() {
    if (ptr != nullptr) cpu_allocator().deallocate(ptr, bytes);
  }
};

}  // namespace

dnnl::engine& dnnl_engine() {
  static dnnl::engine engine(dnnl::engine::kind::cpu, 0);
  return engine;
}

dnnl::stream& dnnl_stream() {
  thread_local dnnl::stream stream(dnnl_engine());
  return stream;
}

dnnl::primitive_attr scratchpad_attr() {
  dnnl::primitive_attr attr;
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  return attr;
}

void* thread_scratchpad(std::size_t bytes) {
  thread_local Scratchpad pad;
  if (bytes > pad.bytes) {
    if (pad.ptr != nullptr) cpu_allocator().deallocate(pad.ptr, pad.bytes);
    pad.ptr = nullptr;
    pad.bytes = 0;
    const std::size_t rounded = (bytes + 4095) / 4096 * 4096;
    pad.ptr = cpu_allocator().allocate(rounded);
    pad.bytes = rounded;
  }
  return pad.ptr;
}

dnnl::memory::desc md4(std::int64_t n, std::int64_t c, std::int64_t h, std::int64_t w, Layout layout,
                       dnnl::memory::data_type type) {
  return {{n, c, h, w}, type, format_tag_of(layout)};
}

dnnl::memory::format_tag format_tag_of(Layout layout) {
  switch (layout) {
    case Layout::kNChw16c:
      return tag::nChw16c;
    case Layout::kNChw8c:
      return tag::nChw8c;
    case Layout::kPlain:
      break;
  }
  return tag::nchw;
}

Layout blocked_layout() {
  // The effective ISA honours ONEDNN_MAX_CPU_ISA, so the AVX2 path can be run on an AVX-512 machine.
  static const Layout layout = [] {
    const auto isa = static_cast<unsigned>(dnnl::get_effective_cpu_isa());
    const auto avx512 = static_cast<unsigned>(dnnl_cpu_isa_avx512_core);
    return (isa & avx512) == avx512 ? Layout::kNChw16c : Layout::kNChw8c;
  }();
  return layout;
}

dnnl::memory::desc md_of(const Tensor& t) {
  const dt type = t.dtype() == DType::kBF16 ? dt::bf16 : dt::f32;
  if (t.dim() == 2) return md4(t.size(0), t.size(1), 1, 1, Layout::kPlain, type);
  DT_CHECK_EQ(t.dim(), 4);
  return md4(t.size(0), t.size(1), t.size(2), t.size(3), t.layout(), type);
}

dnnl::memory::desc md1(std::int64_t n) { return {{n}, dt::f32, tag::x}; }

dnnl::memory mem(const dnnl::memory::desc& md, const Tensor& t) { return {md, dnnl_engine(), t.raw_data()}; }
dnnl::memory mem(const dnnl::memory::desc& md, void* p) { return {md, dnnl_engine(), p}; }

void execute(const dnnl::primitive& p, const dnnl::memory::desc& scratch_md,
             std::unordered_map<int, dnnl::memory> args) {
  const std::size_t bytes = scratch_md.get_size();
  if (bytes > 0) args.emplace(DNNL_ARG_SCRATCHPAD, mem(scratch_md, thread_scratchpad(bytes)));
  dnnl::stream& s = dnnl_stream();
  p.execute(s, args);
  s.wait();
}

std::size_t CacheKeyHash::operator()(const CacheKey& k) const noexcept {
  std::uint64_t h = 0xcbf29ce484222325ull;
  for (std::int64_t x : k.v) {
    h ^= static_cast<std::uint64_t>(x) + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
  }
  return static_cast<std::size_t>(h);
}

std::shared_ptr<const void> PrimitiveCacheBase::find_or_build(
    const CacheKey& key_in, const std::function<std::shared_ptr<const void>()>& build) {
  // Kernels partition work by the thread count at creation time, so it is part of the key.
  CacheKey key = key_in;
  key.v.push_back(omp_get_max_threads());
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = map_.find(key);
    if (it != map_.end()) return it->second;
  }
  std::shared_ptr<const void> entry = build();
  std::lock_guard<std::mutex> lock(mu_);
  ++misses_;
  return map_.emplace(std::move(key), std::move(entry)).first->second;
}

std::size_t PrimitiveCacheBase::size() const {
  std::lock_guard<std::mutex> lock(mu_);
  return map_.size();
}

std::size_t PrimitiveCacheBase::misses() const {
  std::lock_guard<std::mutex> lock(mu_);
  return misses_;
}

PrimitiveCacheBase& primitive_cache() {
  static PrimitiveCacheBase cache;
  return cache;
}

}  // namespace dtrain::cpu

namespace dtrain {

Layout cpu_activation_layout(std::int64_t channels) { return cpu::compute_layout(channels); }

std::size_t cpu_primitive_cache_size() { return cpu::primitive_cache().size(); }
std::size_t cpu_primitive_cache_misses() { return cpu::primitive_cache().misses(); }

}  // namespace dtrain
