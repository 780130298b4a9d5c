#include "ps/sharding.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <utility>

#include "core/error.h"

namespace dtrain::ps {

FlatRange shard_range(std::int64_t total, int parts, int k) {
  DT_CHECK(parts >= 1 && k >= 0 && k < parts && total >= 0, "shard_range({}, {}, {})", total, parts, k);
  // total * k / parts with total up to 2^40 and parts in the thousands stays far below 2^63.
  return {total * k / parts, total * (k + 1) / parts};
}

Sharding::Sharding(std::vector<std::int64_t> tensor_sizes, int shards) : sizes_(std::move(tensor_sizes)) {
  if (shards < 1) throw InputError(fmt::format("the number of parameter servers must be >= 1, got {}", shards));
  for (std::int64_t n : sizes_) {
    DT_CHECK(n >= 0, "a tensor of {} elements", n);
    total_ += n;
  }
  slices_.resize(static_cast<std::size_t>(shards));
  // Walk the tensors once, cutting each where a shard boundary falls inside it.
  std::int64_t start = 0;  // flat offset of tensor t
  int k = 0;
  for (std::size_t t = 0; t < sizes_.size(); ++t) {
    const std::int64_t end = start + sizes_[t];
    std::int64_t at = start;
    while (at < end) {
      while (range(k).end <= at) ++k;
      const FlatRange r = range(k);
      const std::int64_t stop = std::min(end, r.end);
      slices_[static_cast<std::size_t>(k)].push_back({t, at - start, at - r.begin, stop - at});
      at = stop;
    }
    start = end;
  }
}

const std::vector<TensorSlice>& Sharding::slices(int k) const {
  DT_CHECK(k >= 0 && k < shards(), "shard {} of {}", k, shards());
  return slices_[static_cast<std::size_t>(k)];
}

void Sharding::gather(int k, std::span<const float* const> tensors, std::span<float> shard) const {
  DT_CHECK(tensors.size() == sizes_.size(), "gather: {} tensors, the sharding has {}", tensors.size(), sizes_.size());
  DT_CHECK(static_cast<std::int64_t>(shard.size()) == range(k).size(), "gather: a buffer of {} for a shard of {}",
           shard.size(), range(k).size());
  for (const TensorSlice& s : slices(k)) {
    std::memcpy(shard.data() + s.shard_offset, tensors[s.tensor] + s.tensor_offset,
                static_cast<std::size_t>(s.count) * sizeof(float));
  }
}

void Sharding::scatter(int k, std::span<const float> shard, std::span<float* const> tensors) const {
  DT_CHECK(tensors.size() == sizes_.size(), "scatter: {} tensors, the sharding has {}", tensors.size(), sizes_.size());
  DT_CHECK(static_cast<std::int64_t>(shard.size()) == range(k).size(), "scatter: a buffer of {} for a shard of {}",
           shard.size(), range(k).size());
  for (const TensorSlice& s : slices(k)) {
    std::memcpy(tensors[s.tensor] + s.tensor_offset, shard.data() + s.shard_offset,
                static_cast<std::size_t>(s.count) * sizeof(float));
  }
}

}  // namespace dtrain::ps
