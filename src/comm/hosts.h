// Where the ranks of a communicator run, and the message size that follows from it.
//
// A rank's host is its host name and network namespace, so two namespaces on one machine
// (emulated hosts, tools/netns_hosts.sh) count as two hosts, as their traffic crosses a link.
//
// Chunk sizes by where the bytes go: comm/algorithm.h (chunk_bytes_for).
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "comm/communicator.h"

namespace dtrain::comm {

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

// The chunk size of a collective over these ranks (comm/algorithm.h).
inline std::size_t chunk_bytes_for(const HostLayout& layout) { return chunk_bytes_for(layout.spans_hosts()); }

}  // namespace dtrain::comm
