#include "parallel/buckets.h"

#include <algorithm>
#include <cstdint>

#include "comm/algorithms/collective.h"
#include "comm/communicator.h"
#include "comm/reduce.h"
#include "tensor/allocator.h"
#include "tensor/backend.h"

namespace dtrain {

void scaled_copy(const float* src, float* dst, std::size_t n, float scale) {
  for (std::size_t i = 0; i < n; ++i) dst[i] = scale * src[i];
}

GradientBuckets::GradientBuckets(const std::vector<Variable>& params, std::vector<std::string> names,
                                 std::size_t bucket_bytes, DType comm_dtype, int sets, double grad_scale,
                                 const BucketMemory& shared)
    : params_(params),
      names_(std::move(names)),
      comm_dtype_(comm_dtype),
      grad_scale_(static_cast<float>(grad_scale)),
      scale_in_allreduce_(shared && comm_dtype == DType::kF32) {
  std::vector<std::int64_t> numels;
  for (const Variable& p : params) {
    numels.push_back(p.data().numel());
    shapes_.push_back(p.shape());
  }
  const bool f32_wire = comm_dtype == DType::kF32;
  layout_ = plan_buckets(numels, bucket_bytes, adopts_gradients(static_cast<bool>(shared), comm_dtype));
  // The buffers the allreduce runs on, one per bucket and set, each from a cache line of its own.
  const std::size_t elem = dtype_size(comm_dtype);
  const auto padded = [elem](std::int64_t n) { return (static_cast<std::size_t>(n) * elem + 63) / 64 * 64; };
  // They are carved out of one region: the communicator's shared memory for shm, else one tensor
  // of whole huge pages, which the transport's same-host single copy pins 2 MiB at a time
  // (tensor/allocator.h: huge_page_rounded).
  std::size_t bytes = 0;
  for (std::int64_t n : layout_.bucket_elements) bytes += padded(n);
  bytes *= static_cast<std::size_t>(sets);
  std::span<std::byte> region;
  Tensor pages;
  if (shared) {
    region = shared(bytes);
  } else if (bytes > 0) {
    pages = Tensor::zeros({static_cast<std::int64_t>(huge_page_rounded(bytes) / elem)}, comm_dtype);
  }
  std::size_t used = 0;
  auto reduced_buffer = [&](std::int64_t n) {
    Tensor t =
        shared ? Tensor::over_external(region.data() + used, {n}, comm_dtype)
               : pages.slice_rows(static_cast<std::int64_t>(used / elem), static_cast<std::int64_t>(used / elem) + n);
    used += padded(n);
    return t;
  };
  sets_.resize(static_cast<std::size_t>(sets));
  for (Set& s : sets_) {
    for (std::size_t b = 0; b < layout_.buckets.size(); ++b) {
      const std::int64_t n = layout_.bucket_elements[b];
      // A one-parameter bucket usually adopts its gradient: its own buffer waits for a step
      // that needs it.
      s.owned.push_back(layout_.adopts_gradient(b) ? Tensor() : f32_wire ? reduced_buffer(n) : Tensor::zeros({n}));
      s.f32.push_back(s.owned.back());
      s.wire.push_back(f32_wire ? Tensor() : reduced_buffer(n));
    }
    s.unscaled.assign(params.size(), 0);
    s.missing.assign(layout_.buckets.size(), 0);
    s.received.assign(params.size(), 0);
    s.in_place.assign(params.size(), 0);
    s.bad.assign(layout_.buckets.size(), "");
  }
}

GradientBuckets::~GradientBuckets() {
  for (Variable& p : params_) {
    p.set_grad_destination(Tensor());
    p.set_scaled_grad_destination(Tensor(), 1.0F);
  }
}

void GradientBuckets::begin(int set, bool scaled_destinations) {
  Set& s = sets_[static_cast<std::size_t>(set)];
  for (std::size_t b = 0; b < layout_.buckets.size(); ++b) {
    s.missing[b] = static_cast<int>(layout_.buckets[b].size());
    s.f32[b] = s.owned[b];  // lets go of last step's adopted gradient
  }
  const bool scaled = scaled_destinations && comm_dtype_ != DType::kF32;
  for (std::size_t p = 0; p < params_.size(); ++p) {
    const bool owned = s.owned[layout_.bucket_of[p]].defined();
    params_[p].set_grad_destination(owned ? gradient(p, set) : Tensor());
    params_[p].set_scaled_grad_destination(scaled ? wire_slot(p, set) : Tensor(), grad_scale_);
  }
  std::fill(s.unscaled.begin(), s.unscaled.end(), 0);
  std::fill(s.received.begin(), s.received.end(), 0);
  std::fill(s.in_place.begin(), s.in_place.end(), 0);
  s.next_release = 0;
}

std::vector<std::size_t> GradientBuckets::release(int set) {
  Set& s = sets_[static_cast<std::size_t>(set)];
  std::vector<std::size_t> out;
  while (s.next_release < layout_.buckets.size() && s.missing[s.next_release] == 0) out.push_back(s.next_release++);
  return out;
}

std::vector<std::size_t> GradientBuckets::add(std::size_t param, const Tensor& grad, int set) {
  Set& s = sets_[static_cast<std::size_t>(set)];
  if (s.received[param]) return {};
  s.received[param] = 1;
  params_[param].set_scaled_grad_destination(Tensor(), 1.0F);  // the gradient is final: nothing more is written
  const std::size_t b = layout_.bucket_of[param];
  const bool plain = plain_f32_cpu_of_shape(grad, shapes_[param]);
  if (comm_dtype_ != DType::kF32) {
    add_to_wire(param, grad, plain, set);
    --s.missing[b];
    return release(set);
  }
  // Adopted only when nothing but the caller's one handle holds the gradient.
  if (layout_.adopts_gradient(b) && plain && grad.storage_unshared()) {
    s.f32[b] = grad.reshape({grad.numel()});
    s.unscaled[param] = 1;
    --s.missing[b];
    return release(set);
  }
  s.f32[b] = owned_buffer(set, b);
  Tensor slot = gradient(param, set);
  if (plain && grad.raw_data() == slot.raw_data()) {
    s.unscaled[param] = 1;  // written into its slot by backward (gradient destination)
    s.in_place[param] = 1;
  } else if (plain && !scale_in_allreduce_) {
    scaled_copy(grad.data<float>(), slot.data<float>(), static_cast<std::size_t>(slot.numel()), grad_scale_);
  } else if (grad.defined()) {
    slot.copy_from(grad);  // converts dtype and layout (a plain f32 gradient: one memcpy)
    if (scale_in_allreduce_) {
      s.unscaled[param] = 1;  // the allreduce scales the sums
    } else {
      scaled_copy(slot.data<float>(), slot.data<float>(), static_cast<std::size_t>(slot.numel()), grad_scale_);
    }
  } else {
    slot.fill(0.0);
  }
  --s.missing[b];
  return release(set);
}

// A 16-bit wire: the gradient times grad_scale, rounded to the wire type, goes straight into its
// wire slot (one pass, where an f32 wire makes the scaled copy); the f32 slot receives the sum.
void GradientBuckets::add_to_wire(std::size_t param, const Tensor& grad, bool plain, int set) {
  Set& s = sets_[static_cast<std::size_t>(set)];
  const std::size_t b = layout_.bucket_of[param];
  const auto count = static_cast<std::size_t>(shapes_[param].numel());
  std::uint16_t* wire = static_cast<std::uint16_t*>(s.wire[b].raw_data()) + layout_.offset[param];
  if (!grad.defined()) {
    std::fill(wire, wire + count, std::uint16_t{0});  // +0 in f16 and bf16
    return;
  }
  if (grad.dtype() == comm_dtype_ && grad.raw_data() == wire) {
    s.in_place[param] = 1;  // backward wrote it scaled into its wire slot (scaled destination)
    return;
  }
  Tensor slot = gradient(param, set);
  s.in_place[param] = plain && grad.raw_data() == slot.raw_data() ? 1 : 0;
  if (!plain) slot.copy_from(grad);  // converts dtype and layout first
  comm::scaled_to_16bit(comm_dtype_, (plain ? grad : slot).data<float>(), wire, count, grad_scale_);
}

std::vector<std::size_t> GradientBuckets::complete(int set) {
  Set& s = sets_[static_cast<std::size_t>(set)];
  std::vector<std::size_t> out;
  for (std::size_t p = 0; p < s.received.size(); ++p) {
    if (!s.received[p]) {
      auto released = add(p, Tensor(), set);
      out.insert(out.end(), released.begin(), released.end());
    }
  }
  return out;
}

void GradientBuckets::reduce(comm::Communicator& comm, std::size_t bucket, int set, comm::Algorithm algorithm) {
  Set& s = sets_[static_cast<std::size_t>(set)];
  Tensor& f = s.f32[bucket];
  float* data = f.data<float>();
  const std::size_t n = static_cast<std::size_t>(f.numel());
  const auto count_of = [&](std::size_t p) { return static_cast<std::size_t>(shapes_[p].numel()); };
  s.bad[bucket].clear();
  if (scale_in_allreduce_) {
    // Every gradient of the bucket is unscaled (add); the allreduce scales and checks the sums.
    const bool finite = own_block_only_ ? comm.reduce_scatter_scaled(data, n, grad_scale_, algorithm)
                                        : comm.allreduce_scaled(data, n, grad_scale_, algorithm);
    for (std::size_t p : layout_.buckets[bucket]) {
      s.unscaled[p] = 0;
      if (finite || !s.bad[bucket].empty()) continue;
      // Where this rank holds the parameter's sums: all of it, or the slice in its own block.
      const auto numel = static_cast<std::int64_t>(count_of(p));
      const auto [begin, end] = own_block_only_ ? summed_slice(layout_, p, numel, comm.rank(), comm.size())
                                                : std::pair<std::int64_t, std::int64_t>{0, numel};
      const float* x = data + layout_.offset[p] + begin;
      if (begin < end && !comm::all_finite(x, static_cast<std::size_t>(end - begin))) {
        s.bad[bucket] = fmt::format("'{}'", names_[p]);
      }
    }
    if (!finite && s.bad[bucket].empty()) {
      // Another rank's block holds it: name every parameter of the bucket.
      std::vector<std::string> quoted;
      for (std::size_t p : layout_.buckets[bucket]) quoted.push_back(fmt::format("'{}'", names_[p]));
      s.bad[bucket] = fmt::format("{} (summed on another rank)", fmt::join(quoted, " or "));
    }
    return;
  }
  if (comm_dtype_ != DType::kF32) {
    // The scaled gradients are in the wire buffer (add_to_wire): the sums come back widened and
    // checked in one pass.
    auto* wire = static_cast<std::uint16_t*>(s.wire[bucket].raw_data());
    comm.allreduce(wire, n, comm_dtype_, algorithm);
    for (std::size_t p : layout_.buckets[bucket]) {
      const auto at = static_cast<std::size_t>(layout_.offset[p]);
      const bool finite = comm::widen_all_finite(comm_dtype_, wire + at, data + at, count_of(p));
      if (!finite && s.bad[bucket].empty()) s.bad[bucket] = fmt::format("'{}'", names_[p]);
    }
    return;
  }
  comm.allreduce(data, n, DType::kF32, algorithm);
  // An unscaled f32 sum (adopted or written in place) is scaled here, fused with the check.
  for (std::size_t p : layout_.buckets[bucket]) {
    float* x = data + layout_.offset[p];
    const bool scale_now = s.unscaled[p] != 0;
    s.unscaled[p] = 0;
    const bool finite =
        scale_now ? comm::scale_all_finite(x, count_of(p), grad_scale_) : comm::all_finite(x, count_of(p));
    if (!finite && s.bad[bucket].empty()) s.bad[bucket] = fmt::format("'{}'", names_[p]);
  }
}

Tensor& GradientBuckets::owned_buffer(int set, std::size_t bucket) {
  Tensor& t = sets_[static_cast<std::size_t>(set)].owned[bucket];
  if (!t.defined()) t = Tensor::zeros({layout_.bucket_elements[bucket]});
  return t;
}

bool GradientBuckets::adopted(std::size_t bucket, int set) const {
  const Set& s = sets_[static_cast<std::size_t>(set)];
  return s.f32[bucket].defined() && !s.f32[bucket].shares_storage_with(s.owned[bucket]);
}

bool GradientBuckets::written_in_place(std::size_t param, int set) const {
  return sets_[static_cast<std::size_t>(set)].in_place[param] != 0;
}

Tensor GradientBuckets::wire_slot(std::size_t param, int set) const {
  const Tensor& wire = sets_[static_cast<std::size_t>(set)].wire[layout_.bucket_of[param]];
  const std::int64_t begin = layout_.offset[param];
  return wire.slice_rows(begin, begin + shapes_[param].numel()).reshape(shapes_[param]);
}

Tensor GradientBuckets::gradient(std::size_t param, int set) const {
  const Set& s = sets_[static_cast<std::size_t>(set)];
  const Tensor& flat = s.f32[layout_.bucket_of[param]];
  const std::int64_t begin = layout_.offset[param];
  return flat.slice_rows(begin, begin + shapes_[param].numel()).reshape(shapes_[param]);
}

std::string GradientBuckets::non_finite_parameter(int set) const {
  for (const std::string& b : sets_[static_cast<std::size_t>(set)].bad) {
    if (!b.empty()) return b;
  }
  return "";
}

std::pair<std::int64_t, std::int64_t> summed_slice(const BucketLayout& layout, std::size_t param, std::int64_t numel,
                                                   int rank, int ranks) {
  const std::size_t b = layout.bucket_of[param];
  const comm::detail::Block block =
      comm::detail::block_of(static_cast<std::size_t>(layout.bucket_elements[b]), ranks, rank);
  const std::int64_t slot = layout.offset[param];
  const std::int64_t begin = std::max(static_cast<std::int64_t>(block.offset), slot);
  const std::int64_t end = std::min(static_cast<std::int64_t>(block.offset + block.count), slot + numel);
  return begin < end ? std::pair{begin - slot, end - slot} : std::pair<std::int64_t, std::int64_t>{0, 0};
}

bool GradientBuckets::set_own_block_only() {
  own_block_only_ = scale_in_allreduce_;
  return own_block_only_;
}

std::size_t GradientBuckets::total_bytes() const {
  std::size_t n = 0;
  for (std::int64_t e : layout_.bucket_elements) n += static_cast<std::size_t>(e) * 4;
  return n;
}

}  // namespace dtrain
