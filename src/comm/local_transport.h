// Local threads backend: every rank is a thread of one process and messages are memcpy'd between
// their buffers. It lets the collectives be tested for any world size without mpirun, and it is
// strict where MPI is lenient, to catch algorithm bugs: a send completes only when the matching
// receive has copied it (rendezvous, never buffered), and a receive must name exactly the byte
// count of its send.
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "comm/communicator.h"
#include "comm/transport.h"

namespace dtrain::comm {

// The shared mailboxes of one local world of `size` ranks.
class LocalWorld {
 public:
  explicit LocalWorld(int size);
  ~LocalWorld();
  LocalWorld(const LocalWorld&) = delete;
  LocalWorld& operator=(const LocalWorld&) = delete;

  int size() const;
  // The transport of `rank`; call once per rank. It must not outlive the world.
  std::unique_ptr<Transport> transport(int rank);
  // Makes every current and future wait in this world throw a CommError that names `rank` and
  // `what` (run_local calls it when a rank's function throws, so the others stop at once).
  void abort(int rank, const std::string& what);

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

// Runs fn(transport) on `world_size` threads, one per rank, and rethrows the first exception a
// rank threw (the others are aborted, see LocalWorld::abort).
void run_local_transports(int world_size, const std::function<void(Transport&)>& fn);
// Same, with a Communicator per rank.
void run_local(int world_size, const std::function<void(Communicator&)>& fn, const CommOptions& options = {});

}  // namespace dtrain::comm
