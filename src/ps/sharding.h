// How K parameter servers split a model's parameters: every parameter tensor, in registration
// order, is laid end to end into one flat range of N elements, and the range is cut into K
// contiguous pieces, server k holding [floor(N k / K), floor(N (k+1) / K)). The pieces' sizes are
// floor(N / K) or ceil(N / K), so the servers' bytes differ by at most one element whatever the
// tensors' sizes (a model whose one layer holds most of the weights, as LeNet's first fully
// connected layer, still spreads evenly: that tensor is split across servers).
//
// A shard is a list of slices, each a contiguous run of one tensor's elements; gather and scatter
// move a shard between the tensors and one contiguous buffer (the message a worker pushes or a
// server answers with), in flat order.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace dtrain::ps {

struct FlatRange {
  std::int64_t begin = 0, end = 0;
  std::int64_t size() const { return end - begin; }
};

// Piece `k` of `parts` of [0, total).
FlatRange shard_range(std::int64_t total, int parts, int k);

// `count` elements of tensor `tensor` from `tensor_offset`, at `shard_offset` in the shard.
struct TensorSlice {
  std::size_t tensor = 0;
  std::int64_t tensor_offset = 0;
  std::int64_t shard_offset = 0;
  std::int64_t count = 0;
};

class Sharding {
 public:
  // Tensors of `tensor_sizes` elements over `shards` servers (InputError unless shards >= 1).
  Sharding(std::vector<std::int64_t> tensor_sizes, int shards);

  int shards() const { return static_cast<int>(slices_.size()); }
  std::int64_t total() const { return total_; }
  const std::vector<std::int64_t>& tensor_sizes() const { return sizes_; }
  FlatRange range(int k) const { return shard_range(total_, shards(), k); }
  // Shard k's slices in flat order; an empty tensor has none.
  const std::vector<TensorSlice>& slices(int k) const;

  // Copies shard k's elements of `tensors` (one pointer per tensor, tensor_sizes() long) into
  // `shard` (range(k).size() elements), and back.
  void gather(int k, std::span<const float* const> tensors, std::span<float> shard) const;
  void scatter(int k, std::span<const float> shard, std::span<float* const> tensors) const;

 private:
  std::vector<std::int64_t> sizes_;
  std::int64_t total_ = 0;
  std::vector<std::vector<TensorSlice>> slices_;  // per shard
};

}  // namespace dtrain::ps
