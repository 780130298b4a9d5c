#include "comm/local_transport.h"

#include <fmt/format.h>

#include <algorithm>
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <exception>
#include <memory>
#include <mutex>
#include <new>
#include <thread>
#include <vector>

#include "core/error.h"

namespace dtrain::comm {
// A named namespace, not an anonymous one: LocalWorld::Impl holds these types.
namespace local_detail {

// One posted isend or irecv. Pending: queued in a mailbox; copying: matched, the memcpy runs
// outside the world lock; done: complete (error set if the sizes did not match).
struct Op {
  enum class State { kPending, kCopying, kDone };
  int owner = 0;
  int peer = 0;
  int tag = 0;
  bool is_send = false;
  const void* src = nullptr;  // sends
  void* dst = nullptr;        // receives
  std::size_t bytes = 0;
  State state = State::kPending;
  std::string error;
};

}  // namespace local_detail

using local_detail::Op;

struct LocalWorld::Impl {
  // Per rank: receives it posted that wait for a send, sends to it that wait for a receive, the
  // condition its thread sleeps on, and the pool its Op records come from (stable addresses).
  struct Rank {
    std::deque<Op*> recvs;
    std::deque<Op*> sends;
    std::condition_variable cv;
    std::deque<Op> pool;
    std::vector<Op*> free;
    bool taken = false;
  };

  explicit Impl(int n) : ranks(static_cast<std::size_t>(n)) {}

  std::mutex mu;
  std::vector<Rank> ranks;
  bool aborted = false;
  // Memory of allocate_shared: kept until the world ends, so a rank that fails and unwinds never
  // frees what a peer may still be writing.
  std::vector<std::unique_ptr<std::byte[], void (*)(void*)>> shared_blocks;
  int abort_rank = -1;
  std::string abort_what;

  Op* new_op(int owner) {
    Rank& r = ranks[static_cast<std::size_t>(owner)];
    if (r.free.empty()) {
      r.pool.emplace_back();
      return &r.pool.back();
    }
    Op* op = r.free.back();
    r.free.pop_back();
    *op = Op{};
    return op;
  }
  void release(Op* op) { ranks[static_cast<std::size_t>(op->owner)].free.push_back(op); }

  // Called with the lock held on a matched pair; copies without the lock, then completes both.
  void complete(std::unique_lock<std::mutex>& lock, Op* send, Op* recv) {
    if (send->bytes != recv->bytes) {
      const std::string msg = fmt::format(
          "message size mismatch: rank {} sent {} B with tag {}, rank {} expected {} B (ranks disagree on the "
          "collective, its count or its dtype)",
          send->owner, send->bytes, send->tag, recv->owner, recv->bytes);
      send->error = msg;
      recv->error = msg;
    } else if (send->bytes > 0) {
      send->state = recv->state = Op::State::kCopying;
      lock.unlock();
      std::memcpy(recv->dst, send->src, send->bytes);
      lock.lock();
    }
    send->state = recv->state = Op::State::kDone;
    ranks[static_cast<std::size_t>(send->owner)].cv.notify_all();
    ranks[static_cast<std::size_t>(recv->owner)].cv.notify_all();
  }
};

namespace {

// The tag of allocate_shared's address exchange (the collectives' tags stay below 32 * 8).
constexpr int kSharedTag = 32000;

class LocalTransport final : public Transport {
 public:
  LocalTransport(LocalWorld::Impl& world, int rank) : w_(world), rank_(rank) {}

  int rank() const override { return rank_; }
  int size() const override { return static_cast<int>(w_.ranks.size()); }
  std::string_view name() const override { return "local"; }

  Request isend(const void* data, std::size_t bytes, int peer, int tag) override {
    check_peer_and_tag(*this, peer, tag, "isend");
    std::unique_lock lock(w_.mu);
    Op* op = w_.new_op(rank_);
    *op = Op{rank_, peer, tag, true, data, nullptr, bytes, Op::State::kPending, {}};
    auto& recvs = w_.ranks[static_cast<std::size_t>(peer)].recvs;
    auto it = std::find_if(recvs.begin(), recvs.end(), [&](Op* r) { return r->peer == rank_ && r->tag == tag; });
    if (it != recvs.end()) {
      Op* recv = *it;
      recvs.erase(it);
      w_.complete(lock, op, recv);
    } else {
      w_.ranks[static_cast<std::size_t>(peer)].sends.push_back(op);
    }
    return make_request(op);
  }

  Request irecv(void* data, std::size_t bytes, int peer, int tag) override {
    check_peer_and_tag(*this, peer, tag, "irecv");
    std::unique_lock lock(w_.mu);
    Op* op = w_.new_op(rank_);
    *op = Op{rank_, peer, tag, false, nullptr, data, bytes, Op::State::kPending, {}};
    auto& sends = w_.ranks[static_cast<std::size_t>(rank_)].sends;
    auto it = std::find_if(sends.begin(), sends.end(), [&](Op* s) { return s->owner == peer && s->tag == tag; });
    if (it != sends.end()) {
      Op* send = *it;
      sends.erase(it);
      w_.complete(lock, send, op);
    } else {
      w_.ranks[static_cast<std::size_t>(rank_)].recvs.push_back(op);
    }
    return make_request(op);
  }

  bool test(Request& request, std::string_view what) override {
    if (request.done) return true;
    std::unique_lock lock(w_.mu);
    const std::span<Request> one(&request, 1);
    Op* op = as_op(request);
    if (!op->error.empty()) fail(lock, one, fmt::format("rank {}: {}: {}", rank_, what, op->error));
    if (op->state == Op::State::kDone) {
      w_.release(op);
      request.done = true;
      request.handle = 0;
      return true;
    }
    if (w_.aborted) {
      fail(lock, one,
           fmt::format("rank {}: {} aborted because rank {} failed: {}", rank_, what, w_.abort_rank, w_.abort_what));
    }
    return false;
  }

  void cancel(std::span<Request> requests) noexcept override {
    std::unique_lock lock(w_.mu);
    cancel(lock, requests);
  }

  // The ranks are threads of one process: each allocates its own region and sends the others
  // its address.
  std::unique_ptr<SharedRegion> allocate_shared(std::size_t bytes_per_rank, const Deadline& deadline) override {
    const std::size_t bytes = std::max<std::size_t>(64, (bytes_per_rank + 63) / 64 * 64);
    auto* mine = static_cast<std::byte*>(std::aligned_alloc(64, bytes));
    if (mine == nullptr) throw std::bad_alloc();
    std::memset(mine, 0, bytes);
    {
      std::lock_guard lock(w_.mu);
      w_.shared_blocks.emplace_back(mine, &std::free);
    }
    const int p = size();
    std::vector<std::byte*> bases(static_cast<std::size_t>(p), nullptr);
    bases[static_cast<std::size_t>(rank_)] = mine;
    std::vector<Request> reqs;
    for (int peer = 0; peer < p; ++peer) {
      if (peer == rank_) continue;
      reqs.push_back(isend(&bases[static_cast<std::size_t>(rank_)], sizeof(std::byte*), peer, kSharedTag));
      reqs.push_back(irecv(&bases[static_cast<std::size_t>(peer)], sizeof(std::byte*), peer, kSharedTag));
    }
    waitall(reqs, deadline, "allocate_shared");
    return std::make_unique<SharedRegion>(std::move(bases), bytes_per_rank);
  }

  void throw_if_aborted() const override {
    std::lock_guard lock(w_.mu);
    if (w_.aborted) {
      throw CommError(fmt::format("rank {}: aborted because rank {} failed: {}", rank_, w_.abort_rank, w_.abort_what));
    }
  }

  void waitall(std::span<Request> requests, const Deadline& deadline, std::string_view what) override {
    std::unique_lock lock(w_.mu);
    auto& me = w_.ranks[static_cast<std::size_t>(rank_)];
    for (;;) {
      bool all_done = true;
      for (const Request& r : requests) {
        if (r.done) continue;
        const Op* op = as_op(r);
        if (!op->error.empty()) fail(lock, requests, fmt::format("rank {}: {}: {}", rank_, what, op->error));
        if (op->state != Op::State::kDone) all_done = false;
      }
      if (all_done) break;
      if (w_.aborted) {
        fail(lock, requests,
             fmt::format("rank {}: {} aborted because rank {} failed: {}", rank_, what, w_.abort_rank, w_.abort_what));
      }
      if (deadline.is_never()) {
        me.cv.wait(lock);
      } else if (me.cv.wait_until(lock, deadline.when()) == std::cv_status::timeout && deadline.expired()) {
        std::vector<Request> pending;
        for (const Request& r : requests) {
          if (!r.done && as_op(r)->state != Op::State::kDone) pending.push_back(r);
        }
        cancel(lock, requests);
        throw_timeout(rank_, pending, deadline, what);
      }
    }
    for (Request& r : requests) {
      if (r.done) continue;
      w_.release(as_op(r));
      r.done = true;
      r.handle = 0;
    }
  }

 private:
  // A request's handle holds its operation's address.
  static Op* as_op(const Request& r) { return reinterpret_cast<Op*>(r.handle); }  // NOLINT(performance-no-int-to-ptr)
  static Request make_request(Op* op) {
    return Request{reinterpret_cast<std::uintptr_t>(op), op->bytes, op->peer, op->tag, op->is_send, false};
  }

  // Withdraws this rank's unfinished requests from the mailboxes (waiting out copies in flight,
  // which finish quickly) so no peer writes into or reads from their buffers afterwards.
  void cancel(std::unique_lock<std::mutex>& lock, std::span<Request> requests) noexcept {
    auto& me = w_.ranks[static_cast<std::size_t>(rank_)];
    for (Request& r : requests) {
      if (r.done) continue;
      Op* op = as_op(r);
      while (op->state == Op::State::kCopying) me.cv.wait(lock);
      if (op->state == Op::State::kPending) {
        auto& queue = op->is_send ? w_.ranks[static_cast<std::size_t>(op->peer)].sends : me.recvs;
        queue.erase(std::remove(queue.begin(), queue.end(), op), queue.end());
      }
      w_.release(op);
      r.done = true;
      r.handle = 0;
    }
  }

  [[noreturn]] void fail(std::unique_lock<std::mutex>& lock, std::span<Request> requests, const std::string& msg) {
    cancel(lock, requests);
    throw CommError(msg);
  }

  LocalWorld::Impl& w_;
  int rank_;
};

}  // namespace

LocalWorld::LocalWorld(int size) {
  if (size < 1) throw InputError(fmt::format("local world size must be >= 1, got {}", size));
  impl_ = std::make_unique<Impl>(size);
}

LocalWorld::~LocalWorld() = default;

int LocalWorld::size() const { return static_cast<int>(impl_->ranks.size()); }

std::unique_ptr<Transport> LocalWorld::transport(int rank) {
  DT_CHECK(rank >= 0 && rank < size(), "rank {} of a local world of {}", rank, size());
  std::lock_guard lock(impl_->mu);
  auto& r = impl_->ranks[static_cast<std::size_t>(rank)];
  DT_CHECK(!r.taken, "the transport of local rank {} was already created", rank);
  r.taken = true;
  return std::make_unique<LocalTransport>(*impl_, rank);
}

void LocalWorld::abort(int rank, const std::string& what) {
  std::lock_guard lock(impl_->mu);
  if (impl_->aborted) return;
  impl_->aborted = true;
  impl_->abort_rank = rank;
  impl_->abort_what = what;
  for (auto& r : impl_->ranks) r.cv.notify_all();
}

void run_local_transports(int world_size, const std::function<void(Transport&)>& fn) {
  LocalWorld world(world_size);
  std::mutex mu;
  std::exception_ptr first;
  std::vector<std::unique_ptr<Transport>> transports;
  transports.reserve(static_cast<std::size_t>(world_size));
  for (int r = 0; r < world_size; ++r) transports.push_back(world.transport(r));
  std::vector<std::thread> threads;
  threads.reserve(static_cast<std::size_t>(world_size));
  for (int r = 0; r < world_size; ++r) {
    threads.emplace_back([&, r] {
      try {
        fn(*transports[static_cast<std::size_t>(r)]);
      } catch (...) {
        std::string what = "unknown exception";
        try {
          throw;
        } catch (const std::exception& e) {
          what = e.what();
        } catch (...) {
        }
        {
          std::lock_guard lock(mu);
          if (!first) first = std::current_exception();
        }
        world.abort(r, what);
      }
    });
  }
  for (auto& t : threads) t.join();
  if (first) std::rethrow_exception(first);
}

void run_local(int world_size, const std::function<void(Communicator&)>& fn, const CommOptions& options) {
  run_local_transports(world_size, [&](Transport& t) {
    Communicator comm(t, options);
    fn(comm);
  });
}

}  // namespace dtrain::comm
