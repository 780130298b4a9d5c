// The flat parameters cut into K contiguous shards: sizes differ by at most one element, every
// element belongs to exactly one shard, and gather/scatter move exactly a shard's elements.
#include "ps/sharding.h"

#include <gtest/gtest.h>

#include <numeric>

#include "core/error.h"

namespace dtrain::ps {
namespace {

TEST(Sharding, PiecesAreContiguousAndDifferByAtMostOneElement) {
  for (std::int64_t total : {1, 2, 7, 10, 100, 1001, 61706}) {
    for (int parts = 1; parts <= 7; ++parts) {
      std::int64_t lo = total, hi = 0, at = 0;
      for (int k = 0; k < parts; ++k) {
        const FlatRange r = shard_range(total, parts, k);
        EXPECT_EQ(r.begin, at) << total << " in " << parts;
        at = r.end;
        lo = std::min(lo, r.size());
        hi = std::max(hi, r.size());
      }
      EXPECT_EQ(at, total);
      EXPECT_LE(hi - lo, 1) << total << " in " << parts;
    }
  }
}

TEST(Sharding, ATensorIsSplitWhereAShardBoundaryFallsInsideIt) {
  // 7 + 10 + 4 = 21 elements over 3 servers: [0, 7), [7, 14), [14, 21). The second tensor
  // (flat [7, 17)) is cut between servers 1 and 2.
  const Sharding s({7, 10, 4}, 3);
  ASSERT_EQ(s.total(), 21);
  ASSERT_EQ(s.slices(0).size(), 1u);
  EXPECT_EQ(s.slices(0)[0].tensor, 0u);
  EXPECT_EQ(s.slices(0)[0].count, 7);
  ASSERT_EQ(s.slices(1).size(), 1u);
  EXPECT_EQ(s.slices(1)[0].tensor, 1u);
  EXPECT_EQ(s.slices(1)[0].tensor_offset, 0);
  EXPECT_EQ(s.slices(1)[0].count, 7);
  ASSERT_EQ(s.slices(2).size(), 2u);
  EXPECT_EQ(s.slices(2)[0].tensor, 1u);
  EXPECT_EQ(s.slices(2)[0].tensor_offset, 7);
  EXPECT_EQ(s.slices(2)[0].shard_offset, 0);
  EXPECT_EQ(s.slices(2)[0].count, 3);
  EXPECT_EQ(s.slices(2)[1].tensor, 2u);
  EXPECT_EQ(s.slices(2)[1].shard_offset, 3);
  EXPECT_EQ(s.slices(2)[1].count, 4);
}

TEST(Sharding, GatherThenScatterCoversEveryElementOnce) {
  const std::vector<std::int64_t> sizes{5, 0, 13, 1, 8};
  for (int shards = 1; shards <= 6; ++shards) {
    const Sharding s(sizes, shards);
    std::vector<std::vector<float>> tensors, back;
    float next = 1;
    for (std::int64_t n : sizes) {
      std::vector<float> t(static_cast<std::size_t>(n));
      for (float& v : t) v = next++;
      tensors.push_back(t);
      back.emplace_back(static_cast<std::size_t>(n), 0.0f);
    }
    std::vector<const float*> from;
    std::vector<float*> to;
    for (std::size_t i = 0; i < sizes.size(); ++i) {
      from.push_back(tensors[i].data());
      to.push_back(back[i].data());
    }
    std::vector<float> flat;
    for (int k = 0; k < shards; ++k) {
      std::vector<float> shard(static_cast<std::size_t>(s.range(k).size()), -1.0f);
      s.gather(k, from, shard);
      flat.insert(flat.end(), shard.begin(), shard.end());
      s.scatter(k, shard, to);
    }
    std::vector<float> expected(flat.size());
    std::iota(expected.begin(), expected.end(), 1.0f);
    EXPECT_EQ(flat, expected) << shards << " shards: the shards end to end are the flat parameters";
    EXPECT_EQ(back, tensors) << shards << " shards";
  }
}

TEST(Sharding, MoreServersThanElementsLeavesEmptyShardsAndZeroServersIsAnError) {
  const Sharding s({2}, 4);
  EXPECT_EQ(s.range(0).size(), 0);
  EXPECT_EQ(s.range(1).size(), 1);
  EXPECT_TRUE(s.slices(0).empty());
  EXPECT_THROW(Sharding({2}, 0), InputError);
}

}  // namespace
}  // namespace dtrain::ps
