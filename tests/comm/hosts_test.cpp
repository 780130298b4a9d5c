// Host layout and the chunk size chosen from it: ranks that are threads of one process share a
// host; a layout of two hosts gets the network chunk.
#include "comm/hosts.h"

#include <gtest/gtest.h>

#include <mutex>

#include "comm/local_transport.h"
#include "comm_test_util.h"

namespace dtrain::comm {
namespace {

TEST(Hosts, ThreadsOfOneProcessShareOneHost) {
  std::mutex m;
  std::vector<HostLayout> layouts(3);
  run_local(
      3,
      [&](Communicator& comm) {
        HostLayout l = host_layout(comm);
        const std::lock_guard<std::mutex> lock(m);
        layouts[static_cast<std::size_t>(comm.rank())] = std::move(l);
      },
      testing::test_options());
  for (const HostLayout& l : layouts) {
    EXPECT_EQ(l.host_of, (std::vector<int>{0, 0, 0}));
    ASSERT_EQ(l.members.size(), 1u);
    EXPECT_EQ(l.members[0], (std::vector<int>{0, 1, 2}));
    EXPECT_EQ(l.ranks_per_host, 3);
    EXPECT_FALSE(l.spans_hosts());
    EXPECT_EQ(l.names, layouts[0].names);
    EXPECT_EQ(chunk_bytes_for(l), kDefaultChunkBytes);
  }
  // One host: its plain name, without the namespace.
  EXPECT_EQ(layouts[0].names[0], host_key().substr(0, host_key().find("/netns:")));
}

TEST(Hosts, TwoHostsUseTheNetworkChunk) {
  HostLayout l;
  l.host_of = {0, 1};
  l.members = {{0}, {1}};
  l.names = {"a", "b"};
  EXPECT_TRUE(l.spans_hosts());
  EXPECT_EQ(chunk_bytes_for(l), kNetworkChunkBytes);
  // Below Open MPI's TCP eager limit (64 KiB including its header).
  EXPECT_LT(kNetworkChunkBytes, std::size_t{64} << 10);
}

TEST(Hosts, KeyNamesTheNetworkNamespace) {
  const std::string key = host_key();
  EXPECT_FALSE(key.empty());
  EXPECT_NE(key.find("/netns:"), std::string::npos) << key;
}

}  // namespace
}  // namespace dtrain::comm
