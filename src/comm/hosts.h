// Where the ranks of a communicator run, and the message size that follows from it.
//
// A rank's host is its host name and network namespace, so two namespaces on one machine
// (emulated hosts, tools/netns_hosts.sh) count as two hosts, as their traffic crosses a link.
//
// Chunk size (the largest point-to-point message of the pipelined collectives) by where the bytes
// go, as measured with `dtrain bench allreduce --chunk-kb` (docs/distributed.md):
//   one host    1 MiB: Open MPI's shared-memory path copies a large message once (single-copy
//               CMA), so fewer, larger messages are cheaper; 64 KiB chunks halve busbw here.
//   across hosts 32 KiB: over TCP, Open MPI sends a message up to its eager limit (64 KiB by
//               default, header included) at once and a longer one only after a rendezvous round
//               trip, which leaves the link idle between chunks; with 1 MiB chunks a 1 Gbit/s link
//               carried 0.084 GB/s, with 32 KiB 0.119 GB/s (its line rate after headers).
// A job that spans hosts uses the network chunk for all of its messages: chunks are a property of
// the collective, and the slowest link sets its pace.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "comm/communicator.h"

namespace dtrain::comm {

constexpr std::size_t kNetworkChunkBytes = std::size_t{32} << 10;

// "hostname" or "hostname/netns:4026532281" when not in the initial network namespace.
std::string host_key();
// The host name of a host_key(), without its network namespace.
std::string host_name_of(const std::string& key);

struct HostLayout {
  std::vector<int> host_of;               // rank -> host index (hosts in order of their first rank)
  std::vector<std::vector<int>> members;  // host -> its ranks, ascending
  std::vector<std::string> names;         // host -> name ("vm (network namespace 1)" when a name repeats)
  int ranks_per_host = 1;                 // the most ranks on one host

  bool spans_hosts() const { return members.size() > 1; }
};

// A collective: every rank of `comm` calls it (one allgather); the result is the same on every rank.
HostLayout host_layout(Communicator& comm);

// kDefaultChunkBytes on one host, kNetworkChunkBytes across hosts (see above).
constexpr std::size_t chunk_bytes_for(bool spans_hosts) {
  return spans_hosts ? kNetworkChunkBytes : kDefaultChunkBytes;
}
inline std::size_t chunk_bytes_for(const HostLayout& layout) { return chunk_bytes_for(layout.spans_hosts()); }

}  // namespace dtrain::comm
