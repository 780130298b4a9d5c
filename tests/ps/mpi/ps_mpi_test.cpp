// Parameter-server training across processes (run under mpirun with 3 and 4 ranks): the
// constant-push check of server_test.cpp over the MPI transport, every mode, every server count
// that leaves a worker, so no push is lost or applied twice when messages really travel.
#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <string>

#include "comm/mpi/mpi_transport.h"
#include "ps/ps_test_util.h"
#include "ps/server.h"

namespace dtrain::ps {
namespace {

comm::Transport& world() {
  static const std::unique_ptr<comm::Transport> transport = comm::make_mpi_transport();
  return *transport;
}

TEST(PsMpi, EveryModeAppliesEveryPushExactlyOnce) {
  comm::Transport& t = world();
  ASSERT_GE(t.size(), 2) << "run under mpirun -np 3 or more";
  constexpr int kClocks = 50;
  for (SyncMode mode : {SyncMode::kBsp, SyncMode::kSsp, SyncMode::kAsp}) {
    for (int servers = 1; servers <= std::min(3, t.size() - 1); ++servers) {
      const std::string what = std::string(sync_mode_name(mode)) + ", K = " + std::to_string(servers);
      const PsConfig config = testing::test_config(t.size() - servers, servers, mode, 2);
      const double lr = config.workers;  // 1 per push in SSP and ASP (server.h)
      if (!config.is_server(t.rank())) {
        testing::constant_push_worker(t, config, kClocks, lr);
        continue;
      }
      ParameterServer server(t, config, testing::plain_sgd(lr), testing::split_total());
      server.run();
      const std::vector<float> all = testing::constant_push_result(config.workers, kClocks);
      const FlatRange r = server.range();
      EXPECT_EQ(server.weights().to_vector(), std::vector<float>(all.begin() + r.begin, all.begin() + r.end)) << what;
      EXPECT_EQ(server.gate().gaps().total(), kClocks * config.workers) << what;
      if (mode == SyncMode::kSsp) {
        EXPECT_LE(server.gate().gaps().max(), 2) << what;
      }
    }
  }
}

}  // namespace
}  // namespace dtrain::ps
