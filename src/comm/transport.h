// Point-to-point message passing under the collectives. A Transport moves bytes between ranks;
// collectives (communicator.h) are built on isend/irecv/waitall/test only, so every backend (MPI,
// local threads, later NCCL) runs the same algorithm code, and an instrumented wrapper can count
// exactly what each algorithm puts on the wire.
//
// Semantics every backend provides (MPI's, for one communicator):
// - messages from one rank to another with the same tag are matched in the order they were
//   posted (non-overtaking); a receive must name the exact byte count the send carries;
// - a buffer handed to isend/irecv must stay valid and untouched until its request completes;
// - every request is completed by waitall (or wait, or a test that returns true) exactly once; a
//   dropped request leaks;
// - waitall is bounded by a deadline: when it expires, the pending requests are cancelled and a
//   CommError names this rank, the operation and the peer ranks that did not answer, so a dead
//   or stuck rank makes the others fail after the timeout instead of hanging forever.
// After a CommError the transport's state is undefined: report the error and end the job.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string_view>

#include "comm/shared_memory.h"
#include "tensor/dtype.h"

namespace dtrain::comm {

// When a wait gives up. A collective takes one deadline when it starts (now + timeout), so the
// whole collective, not each message, is bounded by the timeout. Timeout 0 means no deadline.
class Deadline {
 public:
  using Clock = std::chrono::steady_clock;

  static Deadline never() { return Deadline(); }
  // seconds <= 0 gives never().
  static Deadline after(double seconds);

  bool is_never() const { return timeout_s_ <= 0; }
  Clock::time_point when() const { return when_; }
  bool expired(Clock::time_point now) const { return !is_never() && now >= when_; }
  bool expired() const { return expired(Clock::now()); }
  double timeout_seconds() const { return timeout_s_; }

 private:
  Clock::time_point when_{};
  double timeout_s_ = 0;
};

// A pending isend or irecv. `handle` belongs to the backend; the rest describes the message for
// error reports. A default-constructed or completed request has done == true.
struct Request {
  std::uintptr_t handle = 0;
  std::size_t bytes = 0;
  int peer = -1;
  int tag = 0;
  bool is_send = false;
  bool done = true;
};

class Transport {
 public:
  virtual ~Transport() = default;

  virtual int rank() const = 0;
  virtual int size() const = 0;
  virtual std::string_view name() const = 0;  // "mpi", "local", ...

  // Non-blocking send of `bytes` bytes to `peer` / receive from `peer`. Tags are in [0, 32767].
  virtual Request isend(const void* data, std::size_t bytes, int peer, int tag) = 0;
  virtual Request irecv(void* data, std::size_t bytes, int peer, int tag) = 0;
  // Completes every request that is not done, or throws CommError (see the file comment).
  // `what` names the operation in that error ("allreduce(ring) of 1024 f32").
  virtual void waitall(std::span<Request> requests, const Deadline& deadline, std::string_view what) = 0;
  // Completes `request` and returns true if it has finished (or was done already); returns false
  // at once otherwise. Throws CommError as waitall does when the request failed. Lets an
  // algorithm move other messages along between the waits it must make (comm/algorithms/tree.h).
  virtual bool test(Request& request, std::string_view what) = 0;
  // Withdraws requests that are not done (after an error), so no peer touches their buffers
  // afterwards; they become done. Never throws.
  virtual void cancel(std::span<Request> requests) noexcept = 0;

  void wait(Request& request, const Deadline& deadline, std::string_view what) {
    waitall(std::span<Request>(&request, 1), deadline, what);
  }
  void send(const void* data, std::size_t bytes, int peer, int tag, const Deadline& deadline, std::string_view what);
  void recv(void* data, std::size_t bytes, int peer, int tag, const Deadline& deadline, std::string_view what);

  // The backend's own allreduce (sum, in place), the baseline the "mpi" algorithm measures.
  // Not bounded by the deadline: it is one opaque library call.
  virtual bool has_native_allreduce() const { return false; }
  // Throws InputError unless has_native_allreduce().
  virtual void native_allreduce(void* data, std::size_t count, DType dtype);

  // Collective: every rank gets `bytes_per_rank` bytes (zeroed) that every other rank can address
  // (shared_memory.h), or every rank gets null where the ranks cannot share memory (more than one
  // host, or a backend without it). Ranks may ask for different sizes (0 included): each region's
  // size is its owner's.
  virtual std::unique_ptr<SharedRegion> allocate_shared(std::size_t bytes_per_rank, const Deadline& deadline);
  // Throws the CommError a wait of this transport would throw if the world was torn down (the
  // local backend aborts every rank when one fails); spin-waits on shared memory call it.
  virtual void throw_if_aborted() const {}
};

// Throws the CommError a backend raises when `pending` did not complete before the deadline:
// "rank 2: allreduce(ring) of 1000 f32 timed out after 5 s waiting for rank 1 (recv 2000 B) ...".
[[noreturn]] void throw_timeout(int rank, std::span<const Request> pending, const Deadline& deadline,
                                std::string_view what);

// Checks a peer rank and tag before a backend posts a message (CommError on a bad value).
void check_peer_and_tag(const Transport& t, int peer, int tag, const char* op);

}  // namespace dtrain::comm
