// The allreduce's time on a profile: which link and constants each placement and algorithm
// reads (allreduce_time.h), the measured ladders, and the algorithms' own cost functions.
#include "perfmodel/allreduce_time.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <utility>

#include "comm/algorithm.h"
#include "core/error.h"
#include "perfmodel_test_util.h"

namespace dtrain::perf {
namespace {

using comm::Algorithm;
using testing::test_profile;

TEST(AllreduceTime, SampledSlowestRankEqualsTheFullScan) {
  const comm::AlphaBetaGamma m{2e-6, 1e-9, 3e-10};
  for (Algorithm a :
       {Algorithm::kRing, Algorithm::kTree, Algorithm::kButterfly, Algorithm::kOneToAll, Algorithm::kMpi}) {
    for (int p : {65, 96, 100, 127, 128, 129, 200, 255, 300}) {
      for (std::size_t n : {std::size_t{1}, std::size_t(p - 1), std::size_t(p + 1), std::size_t{1000},
                            std::size_t{65537}, std::size_t{262144 + 77}, std::size_t{3000000}}) {
        EXPECT_DOUBLE_EQ(slowest_rank_seconds(a, p, n, DType::kF32, m, comm::kDefaultChunkBytes),
                         comm::predict_allreduce_seconds(a, p, n, DType::kF32, m))
            << algorithm_name(a) << " p=" << p << " n=" << n;
      }
    }
    for (int p : {1000, 1024}) {  // the sizes dtrain predict is asked about
      for (std::size_t n : {std::size_t{1500}, std::size_t{262144 + 5}}) {
        EXPECT_DOUBLE_EQ(slowest_rank_seconds(a, p, n, DType::kF16, m, comm::kDefaultChunkBytes),
                         comm::predict_allreduce_seconds(a, p, n, DType::kF16, m))
            << algorithm_name(a) << " p=" << p << " n=" << n;
      }
    }
  }
}

TEST(AllreduceTime, LinksByPlacement) {
  const Profile p = test_profile(8);
  AllreducePlan plan;
  plan.workers = 8;
  const double intra = allreduce_time(plan, 1 << 20, p).seconds;
  EXPECT_DOUBLE_EQ(intra,
                   comm::predict_allreduce_seconds(Algorithm::kRing, 8, 1 << 20, DType::kF32, {1e-7, 1e-10, 1e-12}));
  plan.workers = 16;  // two nodes: the network bounds the flat ring
  EXPECT_DOUBLE_EQ(allreduce_time(plan, 1 << 20, p).seconds,
                   comm::predict_allreduce_seconds(Algorithm::kRing, 16, 1 << 20, DType::kF32, {1e-6, 1e-9, 1e-12}));
  plan.algorithm = Algorithm::kButterfly;  // all 8 ranks of a node cross at once
  EXPECT_DOUBLE_EQ(
      allreduce_time(plan, 1 << 20, p).seconds,
      comm::predict_allreduce_seconds(Algorithm::kButterfly, 16, 1 << 20, DType::kF32, {1e-6, 8e-9, 1e-12}));
  // Hierarchical: the intra-node ring plus the algorithm over nodes on 1/8 of the data.
  plan.hierarchical = true;
  EXPECT_DOUBLE_EQ(allreduce_time(plan, 1 << 20, p).seconds,
                   intra + comm::predict_allreduce_seconds(Algorithm::kButterfly, 2, (1 << 20) / 8, DType::kF32,
                                                           {1e-6, 8e-9, 1e-12}));
  Profile no_network = p;
  no_network.network.reset();
  try {
    allreduce_time(plan, 100, no_network);
    FAIL();
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("16 workers need 2 nodes of 8 accelerator(s)"), std::string::npos);
  }
}

TEST(AllreduceTime, MpiUsesItsMeasuredTimesForTheirWorkerCount) {
  MeasuredAllreduce m;
  m.workers = 2;
  m.points = {{1000, 1e-3}, {2000, 3e-3}, {4000, 4e-3}};
  EXPECT_DOUBLE_EQ(interpolate_measured(m, 1000), 1e-3);
  EXPECT_DOUBLE_EQ(interpolate_measured(m, 1500), 2e-3);   // between two points
  EXPECT_DOUBLE_EQ(interpolate_measured(m, 8000), 6e-3);   // the last two points' line
  EXPECT_DOUBLE_EQ(interpolate_measured(m, 500), 1e-4);    // below: the first line, floored
  EXPECT_DOUBLE_EQ(interpolate_measured(m, 900), 0.8e-3);  // below, above the floor
  MeasuredAllreduce one = m;
  one.points.resize(1);
  EXPECT_DOUBLE_EQ(interpolate_measured(one, 3000), 3e-3);

  Profile p = test_profile(8);
  p.mpi_allreduce = m;
  AllreducePlan plan{Algorithm::kMpi, 2};
  const AllreduceTime t = allreduce_time(plan, 500, p);  // 2000 bytes of f32
  EXPECT_DOUBLE_EQ(t.seconds, 3e-3);
  EXPECT_GE(t.latency, 0);
  EXPECT_LE(t.latency, t.seconds);
  plan.dtype = DType::kF16;  // 1000 bytes on the wire
  EXPECT_DOUBLE_EQ(allreduce_time(plan, 500, p).seconds, 1e-3);
  // Other worker counts and other algorithms: the formulas.
  plan = {Algorithm::kMpi, 4};
  Profile without = p;
  without.mpi_allreduce.reset();
  EXPECT_DOUBLE_EQ(allreduce_time(plan, 500, p).seconds, allreduce_time(plan, 500, without).seconds);
  plan = {Algorithm::kRing, 2};
  EXPECT_DOUBLE_EQ(allreduce_time(plan, 500, p).seconds, allreduce_time(plan, 500, without).seconds);
}

TEST(AllreduceTime, SixteenBitSumsAtTheirOwnRate) {
  Profile p = test_profile(8);  // reduce 1e12 bytes/s
  const AllreducePlan f16{Algorithm::kRing, 4, false, DType::kF16};
  const AllreducePlan bf16{Algorithm::kRing, 4, false, DType::kBF16};
  const double before = allreduce_time(f16, 1000000, p).seconds;
  p.device.reduce_f16 = testing::q(1e9);
  // A ring on 4 reduces (p-1)/p of the 2 MB: 1.5 MB at 1 ns per byte instead of 1 ps.
  EXPECT_NEAR(allreduce_time(f16, 1000000, p).seconds - before, 1.5e6 * (1e-9 - 1e-12), 1e-9);
  EXPECT_DOUBLE_EQ(allreduce_time(bf16, 1000000, p).seconds, before);
}

TEST(AllreduceTime, ShmUsesItsLadderForItsWorkerCountAndItsCostOtherwise) {
  Profile p = test_profile(8);               // intra-node link: alpha 1e-7; reduce 1e12 bytes/s
  p.device.gradient_copy = testing::q(1e9);  // 1 ns per byte moved
  // The formula: 2 rounds at the link's latency, 2 (p-1)/p n bytes moved, (p-1)/p n reduced. For
  // 4 workers and 1000 f32 (n = 4000 bytes): 2e-7 + 6000 ns + 3000 ps.
  AllreducePlan plan{Algorithm::kShm, 4};
  AllreduceTime t = allreduce_time(plan, 1000, p);
  EXPECT_NEAR(t.seconds, 2e-7 + 6000e-9 + 3000e-12, 1e-15);
  EXPECT_NEAR(t.latency, 2e-7, 1e-15);
  // No message crosses a link: its bandwidth does not enter; a measured core round trip is the
  // latency of each of the two barriers.
  Profile other_link = p;
  other_link.node.intra_link.bandwidth = testing::q(1);
  EXPECT_DOUBLE_EQ(allreduce_time(plan, 1000, other_link).seconds, t.seconds);
  Profile cores = p;
  cores.node.core_round_trip = testing::q(5e-8);
  EXPECT_NEAR(allreduce_time(plan, 1000, cores).latency, 1e-7, 1e-15);
  // The ladder, for its own worker count only.
  p.shm_allreduce = MeasuredAllreduce{2, {{1000, 1e-6}, {2000, 3e-6}, {4000, 4e-6}}, "test", std::nullopt};
  EXPECT_NEAR(allreduce_time(plan, 1000, p).seconds, t.seconds, 1e-15);
  plan.workers = 2;
  t = allreduce_time(plan, 500, p);  // 2000 bytes of f32
  EXPECT_DOUBLE_EQ(t.seconds, 3e-6);
  EXPECT_DOUBLE_EQ(t.latency, 1e-7);  // the first line at zero bytes (-1 us), floored at 0.1 us
  plan.dtype = DType::kF16;           // 1000 bytes
  EXPECT_DOUBLE_EQ(allreduce_time(plan, 500, p).seconds, 1e-6);
  // Other algorithms ignore it.
  Profile without = p;
  without.shm_allreduce.reset();
  plan = {Algorithm::kRing, 2};
  EXPECT_DOUBLE_EQ(allreduce_time(plan, 500, p).seconds, allreduce_time(plan, 500, without).seconds);
}

// The largest pulled_bytes over the ranks, and their sum.
std::pair<double, double> pulled(Algorithm a, int p, std::size_t count) {
  double most = 0, all = 0;
  for (int r = 0; r < p; ++r) {
    const auto b = static_cast<double>(pulled_bytes(comm::allreduce_cost(a, p, r, count, DType::kF32)));
    most = std::max(most, b);
    all += b;
  }
  return {most, all};
}

TEST(AllreduceTime, OnOneHostARankPaysWhatItReceivesPlusItsLastMessage) {
  const std::size_t count = 250000;  // 1 MB of f32: one chunk
  // One-to-all on 4: the root receives 3 MB in 3 messages and sends 3 MB; its link would carry
  // 3 (n + c) = 6 MB, its copies are 3 n and its leaves pull the last chunk: 4 MB.
  const comm::CommCost root = comm::allreduce_cost(Algorithm::kOneToAll, 4, 0, count, DType::kF32);
  EXPECT_EQ(root.beta_bytes, 6000000u);
  EXPECT_EQ(pulled_bytes(root), 4000000u);
  // A leaf sends n, then pulls the sum: 2 MB either way.
  EXPECT_EQ(pulled_bytes(comm::allreduce_cost(Algorithm::kOneToAll, 4, 1, count, DType::kF32)), 2000000u);
  // The tree's root pulls its two children's n, then its children pull the sum: 3 MB, not 4.
  const comm::CommCost tree_root = comm::allreduce_cost(Algorithm::kTree, 4, 0, count, DType::kF32);
  EXPECT_EQ(tree_root.beta_bytes, 4000000u);
  EXPECT_EQ(pulled_bytes(tree_root), 3000000u);
  // The ring and the butterfly on a power of two send and receive the same each step: unchanged.
  // (Off a power of two, the butterfly's folded rank returns the sum whole, which its partner
  // pulls: rank 1 of 3 pays 2.67 MB there, not 3.)
  for (Algorithm a : {Algorithm::kRing, Algorithm::kButterfly}) {
    for (int p : {2, 4, 8}) {
      for (int r = 0; r < p; ++r) {
        const comm::CommCost c = comm::allreduce_cost(a, p, r, count, DType::kF32);
        EXPECT_EQ(pulled_bytes(c), c.beta_bytes) << comm::algorithm_name(a) << " rank " << r << " of " << p;
      }
    }
  }
  // A rank that receives nothing (a world of one) keeps its beta bytes.
  EXPECT_EQ(pulled_bytes({}), 0u);
}

TEST(AllreduceTime, SameHostBetaComesFromTheExchangeLadderAtTheBytesPulled) {
  Profile p = test_profile(4);  // intra-node link: alpha 1e-7, 1e10 bytes/s; reduce 1e12 bytes/s
  Profile laddered = p;
  // Half the slope's time per byte up to 1 MB, the slope's own at 4 MB.
  laddered.node.intra_link.exchange_ladder = ExchangeLadder{{{1e6, 0.5e6 / 1e10}, {4e6, 4e6 / 1e10}}, "test", 1, {}};
  const auto& points = laddered.node.intra_link.exchange_ladder->points;
  const std::size_t count = 250000;  // 1 MB of f32
  // The ring and the butterfly: the slowest rank's beta bytes (what it pulls) at the ladder's rate.
  for (Algorithm a : {Algorithm::kRing, Algorithm::kButterfly}) {
    for (int workers : {2, 4}) {
      AllreducePlan plan{a, workers};
      const double moved = slowest_rank_seconds(a, workers, count, DType::kF32, {0, 1, 0}, comm::kDefaultChunkBytes);
      EXPECT_DOUBLE_EQ(moved, pulled(a, workers, count).first);
      const double beta = interpolate_points(points, moved) / moved;
      EXPECT_NEAR(allreduce_time(plan, count, laddered).seconds,
                  slowest_rank_seconds(a, workers, count, DType::kF32, {1e-7, beta, 1e-12}, comm::kDefaultChunkBytes),
                  1e-12)
          << comm::algorithm_name(a) << " on " << workers;
      // Where the slowest rank moves at most 1 MB the ladder halves the transfers' time.
      if (moved <= 1e6) {
        EXPECT_LT(allreduce_time(plan, count, laddered).seconds, 0.6 * allreduce_time(plan, count, p).seconds);
      }
    }
  }
  // One-to-all on 4: the root, 6 rounds, 4 MB pulled at the ladder's 4 MB time, 3 MB added.
  const AllreducePlan one_to_all{Algorithm::kOneToAll, 4};
  EXPECT_NEAR(allreduce_time(one_to_all, count, laddered).seconds, 6 * 1e-7 + 4e6 / 1e10 + 3e6 / 1e12, 1e-12);
  EXPECT_NEAR(allreduce_time(one_to_all, count, laddered).latency, 6 * 1e-7, 1e-15);
  // The tree on 4: its root, 3 MB pulled at the ladder's 3 MB time (between the points), 2 MB added.
  const double tree_rounds =
      static_cast<double>(comm::allreduce_cost(Algorithm::kTree, 4, 0, count, DType::kF32).rounds);
  EXPECT_NEAR(allreduce_time({Algorithm::kTree, 4}, count, laddered).seconds,
              tree_rounds * 1e-7 + interpolate_points(points, 3e6) + 2e6 / 1e12, 1e-12);
  // The ring on 2 moves 1 MB: half the slope's time. One-to-all on 4 pulls 4 MB, further up.
  AllreducePlan ring{Algorithm::kRing, 2};
  const double ring_ratio = allreduce_time(ring, count, laddered).seconds / allreduce_time(ring, count, p).seconds;
  const double star_ratio =
      allreduce_time(one_to_all, count, laddered).seconds / allreduce_time(one_to_all, count, p).seconds;
  EXPECT_LT(ring_ratio, star_ratio);
  // Across nodes the network's slope stays (no ladder there), and so do the beta bytes.
  AllreducePlan across{Algorithm::kRing, 8};
  EXPECT_DOUBLE_EQ(allreduce_time(across, count, laddered).seconds, allreduce_time(across, count, p).seconds);
  AllreducePlan star_across{Algorithm::kOneToAll, 8};
  EXPECT_DOUBLE_EQ(allreduce_time(star_across, count, laddered).seconds, allreduce_time(star_across, count, p).seconds);
}

TEST(AllreduceTime, OnePairLadderForTheRanksAnAlgorithmKeepsBusy) {
  // 4 ranks on a host calibrated as 2 pairs side by side (1e10 bytes/s per pair) and as one pair
  // alone (2e10). The ring and the butterfly keep all four busy: the side-by-side ladder. In 4
  // chunks of 1 MiB, one-to-all's root pulls 13 MiB and each leaf 5: 28/13 ranks busy, 1/13 of the
  // way from one pair's ladder to both pairs'. The pipelined tree (root and middle rank 9 MiB,
  // leaves 5): 28/9 ranks, 5/9 of the way.
  Profile p = test_profile(4);
  ExchangeLadder ladder{{{1e5, 1e5 / 1e10}, {1e8, 1e8 / 1e10}}, "test", 2, {{1e5, 1e5 / 2e10}, {1e8, 1e8 / 2e10}}};
  p.node.intra_link.exchange_ladder = ladder;
  const std::size_t count = 1 << 20;  // 4 MiB: several chunks, so the tree pipelines
  auto beta_of = [&](Algorithm a) {
    const AllreducePlan plan{a, 4};
    // Solve the time for beta: the cost is linear in it, and the same rank is slowest in every term.
    const double t = allreduce_time(plan, count, p).seconds;
    const double base = slowest_rank_seconds(a, 4, count, DType::kF32, {1e-7, 0, 1e-12}, comm::kDefaultChunkBytes);
    return (t - base) / pulled(a, 4, count).first;
  };
  constexpr double kMiB = 1 << 20;
  EXPECT_DOUBLE_EQ(pulled(Algorithm::kOneToAll, 4, count).first, 13 * kMiB);
  EXPECT_DOUBLE_EQ(pulled(Algorithm::kOneToAll, 4, count).second, 28 * kMiB);
  EXPECT_DOUBLE_EQ(pulled(Algorithm::kTree, 4, count).first, 9 * kMiB);
  EXPECT_DOUBLE_EQ(pulled(Algorithm::kTree, 4, count).second, 28 * kMiB);
  EXPECT_NEAR(beta_of(Algorithm::kRing), 1e-10, 1e-14);
  EXPECT_NEAR(beta_of(Algorithm::kButterfly), 1e-10, 1e-14);
  EXPECT_NEAR(beta_of(Algorithm::kOneToAll), (12.0 / 13 * 0.5 + 1.0 / 13) * 1e-10, 1e-14);
  EXPECT_NEAR(beta_of(Algorithm::kTree), (4.0 / 9 * 0.5 + 5.0 / 9) * 1e-10, 1e-14);
  // Two workers on this host: one pair's ladder.
  EXPECT_NEAR(
      allreduce_time({Algorithm::kRing, 2}, count, p).seconds,
      slowest_rank_seconds(Algorithm::kRing, 2, count, DType::kF32, {1e-7, 0.5e-10, 1e-12}, comm::kDefaultChunkBytes),
      1e-12);
}

}  // namespace
}  // namespace dtrain::perf
