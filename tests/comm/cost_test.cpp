// Each algorithm's cost function against what an instrumented transport counts: messages and
// bytes sent and received per rank, and bytes reduced (from the communicator's stats), for world
// sizes 1..9 and counts {0, 1, p-1, p+1, 1000, 70000}, with the default chunk and a small one.
#include <gtest/gtest.h>

#include <cmath>
#include <mutex>

#include "comm/instrumented_transport.h"
#include "comm/local_transport.h"
#include "comm_test_util.h"

namespace dtrain::comm {
namespace {

void expect_counts(const CommCost& seen, std::uint64_t reduced, const CommCost& model, const std::string& where) {
  EXPECT_EQ(seen.messages_sent, model.messages_sent) << where;
  EXPECT_EQ(seen.bytes_sent, model.bytes_sent) << where;
  EXPECT_EQ(seen.messages_received, model.messages_received) << where;
  EXPECT_EQ(seen.bytes_received, model.bytes_received) << where;
  EXPECT_EQ(reduced, model.bytes_reduced) << where;
}

class AllreduceCost : public ::testing::TestWithParam<Algorithm> {};

TEST_P(AllreduceCost, InstrumentedCountsEqualTheCostFunction) {
  const Algorithm algorithm = GetParam();
  for (std::size_t chunk : {kDefaultChunkBytes, std::size_t{1000}}) {
    for (DType dtype : {DType::kF32, DType::kBF16}) {
      for (int p = 1; p <= 9; ++p) {
        for (std::size_t count : {std::size_t{0}, std::size_t{1}, static_cast<std::size_t>(p - 1),
                                  static_cast<std::size_t>(p + 1), std::size_t{1000}, std::size_t{70000}}) {
          run_local_transports(p, [&](Transport& inner) {
            InstrumentedTransport t(inner);
            Communicator comm(t, testing::test_options(chunk));
            testing::TypedBuffer buf(dtype, testing::closed_form_data(comm.rank(), count));
            comm.allreduce(buf.data(), count, dtype, algorithm);
            const std::string where = std::string(algorithm_name(algorithm)) + " " + std::string(dtype_name(dtype)) +
                                      " p=" + std::to_string(p) + " rank " + std::to_string(comm.rank()) + " count " +
                                      std::to_string(count) + " chunk " + std::to_string(chunk);
            expect_counts(t.counts(), comm.stats().bytes_reduced,
                          allreduce_cost(algorithm, p, comm.rank(), count, dtype, chunk), where);
          });
        }
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Comm, AllreduceCost,
                         ::testing::Values(Algorithm::kRing, Algorithm::kTree, Algorithm::kButterfly,
                                           Algorithm::kOneToAll, Algorithm::kShm, Algorithm::kAuto),
                         [](const auto& tp) { return std::string(algorithm_name(tp.param)); });

TEST(CollectiveCost, BroadcastAllgatherReduceScatterBarrier) {
  const std::size_t chunk = 4096;
  for (int p = 1; p <= 9; ++p) {
    for (std::size_t n : {std::size_t{0}, std::size_t{1}, std::size_t{5000}, std::size_t{100000}}) {
      run_local_transports(p, [&](Transport& inner) {
        InstrumentedTransport t(inner);
        Communicator comm(t, testing::test_options(chunk));
        const int r = comm.rank();
        const std::string where = "p=" + std::to_string(p) + " rank " + std::to_string(r) + " n " + std::to_string(n);
        const auto P = static_cast<std::size_t>(p);

        std::vector<std::byte> bytes(n * P);
        const int root = p - 1;
        comm.broadcast(bytes.data(), n, root);
        expect_counts(t.counts(), 0, broadcast_cost(p, r, n, root, chunk), "broadcast " + where);

        t.reset();
        comm.allgather(bytes.data(), n);
        expect_counts(t.counts(), 0, allgather_cost(p, r, n, chunk), "allgather " + where);

        t.reset();
        std::vector<float> f(n * P, 1.0f);
        const std::uint64_t reduced_before = comm.stats().bytes_reduced;
        comm.reduce_scatter(f.data(), n, DType::kF32);
        expect_counts(t.counts(), comm.stats().bytes_reduced - reduced_before,
                      reduce_scatter_cost(p, r, n, DType::kF32, chunk), "reduce_scatter " + where);

        t.reset();
        comm.barrier();
        expect_counts(t.counts(), 0, barrier_cost(p), "barrier " + where);
      });
    }
  }
}

TEST(CostModel, RingMatchesThakurFormulaWhenBlocksDivideEvenly) {
  // p = 4, n = 4 MiB f32, one chunk per block: 2(p-1) alpha + 2((p-1)/p) n beta + ((p-1)/p) n gamma.
  const int p = 4;
  const std::size_t count = std::size_t{1} << 20, n = count * 4;
  const AlphaBetaGamma m{2e-6, 1e-10, 3e-11};
  const double t = predict_allreduce_seconds(Algorithm::kRing, p, count, DType::kF32, m, n);
  const double thakur = 2.0 * (p - 1) * m.alpha + 2.0 * (p - 1) / p * n * m.beta + 1.0 * (p - 1) / p * n * m.gamma;
  EXPECT_NEAR(t, thakur, 1e-12);
  // Butterfly at a power of two: 2 log2 p alpha and the ring's bandwidth terms.
  const double b = predict_allreduce_seconds(Algorithm::kButterfly, p, count, DType::kF32, m, n);
  EXPECT_NEAR(b, 2.0 * 2 * m.alpha + 2.0 * (p - 1) / p * n * m.beta + 1.0 * (p - 1) / p * n * m.gamma, 1e-12);
  // One-to-all in chunks c = n/8: rank 0 moves (p-1) n each way at once, one chunk of it filling
  // the pipeline, and reduces (p-1) n.
  const std::size_t c = n / 8;
  const double o = predict_allreduce_seconds(Algorithm::kOneToAll, p, count, DType::kF32, m, c);
  EXPECT_NEAR(o, 2.0 * (p - 1) * m.alpha + (p - 1.0) * (n + c) * m.beta + (p - 1.0) * n * m.gamma, 1e-12);
  // In one chunk nothing overlaps: (p-1) n in, then (p-1) n out.
  const double whole = predict_allreduce_seconds(Algorithm::kOneToAll, p, count, DType::kF32, m, n);
  EXPECT_NEAR(whole, 2.0 * (p - 1) * m.alpha + 2.0 * (p - 1) * n * m.beta + (p - 1.0) * n * m.gamma, 1e-12);
}

}  // namespace
}  // namespace dtrain::comm
