#include "comm/transport.h"

#include <fmt/format.h>

#include <algorithm>
#include <vector>

#include "core/error.h"

namespace dtrain::comm {

Deadline Deadline::after(double seconds) {
  Deadline d;
  if (seconds <= 0) return d;
  d.timeout_s_ = seconds;
  d.when_ = Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds));
  return d;
}

void Transport::send(const void* data, std::size_t bytes, int peer, int tag, const Deadline& deadline,
                     std::string_view what) {
  Request r = isend(data, bytes, peer, tag);
  wait(r, deadline, what);
}

void Transport::recv(void* data, std::size_t bytes, int peer, int tag, const Deadline& deadline,
                     std::string_view what) {
  Request r = irecv(data, bytes, peer, tag);
  wait(r, deadline, what);
}

void Transport::native_allreduce(void*, std::size_t, DType) {
  throw InputError(
      fmt::format("allreduce algorithm 'mpi' needs the MPI transport; this communicator runs on "
                  "'{}' (launch with mpirun, or pick ring|tree|butterfly|onetoall|auto)",
                  name()));
}

std::unique_ptr<SharedRegion> Transport::allocate_shared(std::size_t, const Deadline&) { return nullptr; }

void throw_timeout(int rank, std::span<const Request> pending, const Deadline& deadline, std::string_view what) {
  // Name each silent peer once, with what this rank was waiting for from it.
  std::vector<int> peers;
  for (const Request& r : pending) {
    if (std::find(peers.begin(), peers.end(), r.peer) == peers.end()) peers.push_back(r.peer);
  }
  std::sort(peers.begin(), peers.end());
  std::string detail;
  for (int peer : peers) {
    std::size_t sends = 0, recvs = 0, send_bytes = 0, recv_bytes = 0;
    for (const Request& r : pending) {
      if (r.peer != peer) continue;
      (r.is_send ? sends : recvs) += 1;
      (r.is_send ? send_bytes : recv_bytes) += r.bytes;
    }
    if (!detail.empty()) detail += ", ";
    detail += fmt::format("rank {} (", peer);
    if (recvs) detail += fmt::format("{} recv{} of {} B", recvs, recvs > 1 ? "s" : "", recv_bytes);
    if (recvs && sends) detail += ", ";
    if (sends) detail += fmt::format("{} send{} of {} B", sends, sends > 1 ? "s" : "", send_bytes);
    detail += ")";
  }
  throw CommError(
      fmt::format("rank {}: {} timed out after {} s waiting for {}; that rank may have died, be stuck, or be running a "
                  "different collective (raise the collective timeout if it is only slow)",
                  rank, what, deadline.timeout_seconds(), detail));
}

void check_peer_and_tag(const Transport& t, int peer, int tag, const char* op) {
  if (peer < 0 || peer >= t.size() || tag < 0 || tag > 32767) {
    throw CommError(
        fmt::format("rank {}: {} to/from rank {} with tag {}: peer must be in [0, {}) and tag in "
                    "[0, 32767]",
                    t.rank(), op, peer, tag, t.size()));
  }
}

}  // namespace dtrain::comm
