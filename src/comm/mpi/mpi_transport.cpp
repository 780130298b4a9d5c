#include "comm/mpi/mpi_transport.h"

// The C API only: Open MPI's deprecated C++ bindings would otherwise come along and need
// libmpi_cxx at link time.
#define OMPI_SKIP_MPICXX 1
#define MPICH_SKIP_MPICXX 1
#include <fmt/format.h>
#include <mpi.h>
#include <sched.h>

#include <climits>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <limits>
#include <vector>

#include "comm/reduce.h"
#include "core/error.h"

namespace dtrain::comm {
namespace {

std::string mpi_error_string(int code) {
  char text[MPI_MAX_ERROR_STRING];
  int len = 0;
  if (MPI_Error_string(code, text, &len) != MPI_SUCCESS) return fmt::format("MPI error {}", code);
  return std::string(text, static_cast<std::size_t>(len));
}

void check(int rc, int rank, const char* call) {
  if (rc != MPI_SUCCESS) throw CommError(fmt::format("rank {}: {} failed: {}", rank, call, mpi_error_string(rc)));
}

void finalize_at_exit() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (!finalized) MPI_Finalize();
}

// User-defined reductions for the 16-bit types (MPI has no f16/bf16 sum): inout += in, added as
// comm/reduce.h does. MPI passes the element count of our 2-byte datatype.
void sum_f16(void* in, void* inout, int* len, MPI_Datatype*) {
  reduce_sum(inout, in, static_cast<std::size_t>(*len), DType::kF16);
}
void sum_bf16(void* in, void* inout, int* len, MPI_Datatype*) {
  reduce_sum(inout, in, static_cast<std::size_t>(*len), DType::kBF16);
}

// Polls of MPI_Testall (tens of nanoseconds each) before a waiting rank starts yielding its core.
constexpr unsigned kSpinPolls = 1024;

static_assert(sizeof(MPI_Request) <= sizeof(std::uintptr_t), "MPI_Request must fit Request::handle");

std::byte* align_to_cache_line(void* p) {
  auto* at = static_cast<std::byte*>(p);
  const auto past = reinterpret_cast<std::uintptr_t>(at) % 64;
  return past == 0 ? at : at + (64 - past);
}

// An MPI-3 shared-memory window: each rank's segment, mapped by every rank of the host.
class MpiSharedRegion final : public SharedRegion {
 public:
  MpiSharedRegion(std::vector<std::byte*> bases, std::size_t bytes, MPI_Win win)
      : SharedRegion(std::move(bases), bytes), win_(win) {}
  ~MpiSharedRegion() override {
    int finalized = 0;
    MPI_Finalized(&finalized);
    // MPI_Win_free waits for every rank: after an error it could wait forever.
    if (!finalized && !abandoned() && std::uncaught_exceptions() == 0) MPI_Win_free(&win_);
  }

 private:
  MPI_Win win_;
};

class MpiTransport final : public Transport {
 public:
  MpiTransport() {
    mpi_initialize();
    check(MPI_Comm_dup(MPI_COMM_WORLD, &comm_), -1, "MPI_Comm_dup");
    check(MPI_Comm_set_errhandler(comm_, MPI_ERRORS_RETURN), -1, "MPI_Comm_set_errhandler");
    check(MPI_Comm_rank(comm_, &rank_), -1, "MPI_Comm_rank");
    check(MPI_Comm_size(comm_, &size_), rank_, "MPI_Comm_size");
    check(MPI_Type_contiguous(2, MPI_BYTE, &half_type_), rank_, "MPI_Type_contiguous");
    check(MPI_Type_commit(&half_type_), rank_, "MPI_Type_commit");
    check(MPI_Op_create(&sum_f16, 1, &sum_f16_), rank_, "MPI_Op_create");
    check(MPI_Op_create(&sum_bf16, 1, &sum_bf16_), rank_, "MPI_Op_create");
  }

  ~MpiTransport() override {
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (finalized) return;  // MPI already released everything
    MPI_Op_free(&sum_f16_);
    MPI_Op_free(&sum_bf16_);
    MPI_Type_free(&half_type_);
    MPI_Comm_free(&comm_);
  }

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  std::string_view name() const override { return "mpi"; }

  Request isend(const void* data, std::size_t bytes, int peer, int tag) override {
    check_peer_and_tag(*this, peer, tag, "isend");
    MPI_Request req;
    check(MPI_Isend(data, count_of(bytes), MPI_BYTE, peer, tag, comm_, &req), rank_, "MPI_Isend");
    return make_request(req, bytes, peer, tag, true);
  }

  Request irecv(void* data, std::size_t bytes, int peer, int tag) override {
    check_peer_and_tag(*this, peer, tag, "irecv");
    MPI_Request req;
    check(MPI_Irecv(data, count_of(bytes), MPI_BYTE, peer, tag, comm_, &req), rank_, "MPI_Irecv");
    return make_request(req, bytes, peer, tag, false);
  }

  void waitall(std::span<Request> requests, const Deadline& deadline, std::string_view what) override {
    reqs_.clear();
    index_.clear();
    for (std::size_t i = 0; i < requests.size(); ++i) {
      if (requests[i].done) continue;
      reqs_.push_back(to_mpi(requests[i]));
      index_.push_back(i);
    }
    if (reqs_.empty()) return;
    statuses_.resize(reqs_.size());
    // Poll: spin first (a shared-memory message arrives within microseconds), then yield the
    // core every few polls, so that a peer or another process waiting for this core (ranks
    // outnumbering cores, a shared machine) can run. The clock is read every 16 polls.
    for (unsigned polls = 1;; ++polls) {
      int flag = 0;
      const int rc = MPI_Testall(static_cast<int>(reqs_.size()), reqs_.data(), &flag, statuses_.data());
      if (rc != MPI_SUCCESS) fail_statuses(requests, rc, what);
      if (flag) break;
      if (polls % 16 == 0) {
        if (deadline.expired()) timeout(requests, deadline, what);
        if (polls > kSpinPolls) sched_yield();
      }
    }
    for (std::size_t i : index_) {
      requests[i].done = true;
      requests[i].handle = 0;
    }
  }

  // One MPI_Testall over the one request, so a failure is reported and dropped as waitall's are.
  bool test(Request& request, std::string_view what) override {
    if (request.done) return true;
    reqs_.assign(1, to_mpi(request));
    index_.assign(1, 0);
    statuses_.resize(1);
    const std::span<Request> one(&request, 1);
    int flag = 0;
    const int rc = MPI_Testall(1, reqs_.data(), &flag, statuses_.data());
    if (rc != MPI_SUCCESS) fail_statuses(one, rc, what);
    if (!flag) return false;  // an unfinished request keeps its handle
    request.done = true;
    request.handle = 0;
    return true;
  }

  void cancel(std::span<Request> requests) noexcept override {
    for (Request& r : requests) {
      if (r.done) continue;
      MPI_Request req = to_mpi(r);
      if (!r.is_send) MPI_Cancel(&req);
      if (req != MPI_REQUEST_NULL) MPI_Request_free(&req);
      r.done = true;
      r.handle = 0;
    }
  }

  bool has_native_allreduce() const override { return true; }

  // Every rank on one host (MPI_Comm_split_type's shared-memory group is the whole world): a
  // shared window with a segment per rank. Otherwise null on every rank.
  std::unique_ptr<SharedRegion> allocate_shared(std::size_t bytes_per_rank, const Deadline&) override {
    MPI_Comm node = MPI_COMM_NULL;
    check(MPI_Comm_split_type(comm_, MPI_COMM_TYPE_SHARED, rank_, MPI_INFO_NULL, &node), rank_, "MPI_Comm_split_type");
    int node_size = 0;
    MPI_Comm_size(node, &node_size);
    MPI_Comm_free(&node);
    if (node_size != size_) return nullptr;
    const std::size_t bytes = std::max<std::size_t>(64, (bytes_per_rank + 63) / 64 * 64);
    if (bytes > static_cast<std::size_t>(std::numeric_limits<MPI_Aint>::max())) {
      throw InputError(fmt::format("shared memory of {} B per rank is more than MPI can map", bytes));
    }
    MPI_Info info = MPI_INFO_NULL;
    MPI_Info_create(&info);
    // Each rank's segment on its own pages (first touched by its owner), not one contiguous block.
    MPI_Info_set(info, "alloc_shared_noncontig", "true");
    void* mine = nullptr;
    MPI_Win win = MPI_WIN_NULL;
    // Open MPI puts a segment 8 bytes past a page boundary: 64 more bytes, and every base rounded
    // up to a cache line (the same place in every process: mappings start on page boundaries).
    const int rc = MPI_Win_allocate_shared(static_cast<MPI_Aint>(bytes + 64), 1, info, comm_, &mine, &win);
    MPI_Info_free(&info);
    check(rc, rank_, "MPI_Win_allocate_shared");
    std::vector<std::byte*> bases(static_cast<std::size_t>(size_));
    for (int r = 0; r < size_; ++r) {
      MPI_Aint size = 0;
      int unit = 0;
      void* base = nullptr;
      check(MPI_Win_shared_query(win, r, &size, &unit, &base), rank_, "MPI_Win_shared_query");
      bases[static_cast<std::size_t>(r)] = align_to_cache_line(base);
    }
    std::memset(bases[static_cast<std::size_t>(rank_)], 0, bytes);
    check(MPI_Barrier(comm_), rank_, "MPI_Barrier");  // every segment zeroed before anyone uses one
    return std::make_unique<MpiSharedRegion>(std::move(bases), bytes_per_rank, win);
  }

  void native_allreduce(void* data, std::size_t count, DType dtype) override {
    check_reducible(dtype, "allreduce(mpi)");
    MPI_Datatype type = dtype == DType::kF32 ? MPI_FLOAT : half_type_;
    MPI_Op op = dtype == DType::kF32 ? MPI_SUM : (dtype == DType::kF16 ? sum_f16_ : sum_bf16_);
    // MPI counts are int: reduce longer vectors in pieces.
    const std::size_t elem = dtype_size(dtype);
    constexpr std::size_t kMaxCount = std::size_t{1} << 30;
    for (std::size_t off = 0; off < count; off += kMaxCount) {
      const int n = static_cast<int>(std::min(kMaxCount, count - off));
      check(MPI_Allreduce(MPI_IN_PLACE, static_cast<std::byte*>(data) + off * elem, n, type, op, comm_), rank_,
            "MPI_Allreduce");
    }
  }

 private:
  static int count_of(std::size_t bytes) {
    if (bytes > static_cast<std::size_t>(INT_MAX)) {
      throw InputError(fmt::format("MPI message of {} B exceeds the 2 GiB limit of one MPI call; use chunks", bytes));
    }
    return static_cast<int>(bytes);
  }
  static MPI_Request to_mpi(const Request& r) {
    MPI_Request req;
    std::memcpy(&req, &r.handle, sizeof req);  // NOLINT(bugprone-sizeof-expression): the handle itself
    return req;
  }
  static Request make_request(MPI_Request req, std::size_t bytes, int peer, int tag, bool is_send) {
    Request r{0, bytes, peer, tag, is_send, false};
    std::memcpy(&r.handle, &req, sizeof req);  // NOLINT(bugprone-sizeof-expression): the handle itself
    return r;
  }

  // The deadline passed: find the requests still pending (MPI_Request_get_status leaves them
  // intact), cancel and free them all, and report the silent peers.
  [[noreturn]] void timeout(std::span<Request> requests, const Deadline& deadline, std::string_view what) {
    std::vector<Request> pending;
    for (std::size_t k = 0; k < reqs_.size(); ++k) {
      int flag = 0;
      MPI_Request_get_status(reqs_[k], &flag, MPI_STATUS_IGNORE);
      if (!flag) pending.push_back(requests[index_[k]]);
    }
    drop(requests);
    throw_timeout(rank_, pending, deadline, what);
  }

  [[noreturn]] void fail_statuses(std::span<Request> requests, int rc, std::string_view what) {
    std::string detail = mpi_error_string(rc);
    if (rc == MPI_ERR_IN_STATUS) {
      for (std::size_t k = 0; k < reqs_.size(); ++k) {
        const int err = statuses_[k].MPI_ERROR;
        if (err == MPI_SUCCESS || err == MPI_ERR_PENDING) continue;
        const Request& r = requests[index_[k]];
        detail = fmt::format("{} of {} B {} rank {}: {}", r.is_send ? "send" : "recv", r.bytes,
                             r.is_send ? "to" : "from", r.peer, mpi_error_string(err));
        break;
      }
    }
    drop(requests);
    throw CommError(fmt::format("rank {}: {} failed: {}", rank_, what, detail));
  }

  // Cancels and frees what MPI_Testall left unfinished (reqs_ holds the current handles).
  void drop(std::span<Request> requests) noexcept {
    for (std::size_t k = 0; k < reqs_.size(); ++k) {
      Request& r = requests[index_[k]];
      if (reqs_[k] != MPI_REQUEST_NULL) {
        if (!r.is_send) MPI_Cancel(&reqs_[k]);
        MPI_Request_free(&reqs_[k]);
      }
      r.done = true;
      r.handle = 0;
    }
  }

  MPI_Comm comm_ = MPI_COMM_NULL;
  int rank_ = -1;
  int size_ = 0;
  MPI_Datatype half_type_ = MPI_DATATYPE_NULL;
  MPI_Op sum_f16_ = MPI_OP_NULL;
  MPI_Op sum_bf16_ = MPI_OP_NULL;
  std::vector<MPI_Request> reqs_;
  std::vector<MPI_Status> statuses_;
  std::vector<std::size_t> index_;
};

}  // namespace

void mpi_initialize(int* argc, char*** argv) {
  int finalized = 0, initialized = 0;
  MPI_Finalized(&finalized);
  if (finalized) throw CommError("MPI was already finalised in this process; it cannot be started again");
  MPI_Initialized(&initialized);
  if (initialized) return;
  int provided = 0;
  const int rc = MPI_Init_thread(argc, argv, MPI_THREAD_SERIALIZED, &provided);
  if (rc != MPI_SUCCESS) throw CommError(fmt::format("MPI_Init_thread failed: {}", mpi_error_string(rc)));
  if (provided < MPI_THREAD_SERIALIZED) {
    // Calls then have to stay on the main thread; collectives work, a background thread would not.
    fmt::print(stderr, "dtrain: MPI provides thread level {} < MPI_THREAD_SERIALIZED\n", provided);
  }
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  std::atexit(finalize_at_exit);
}

bool mpi_launched() {
  for (const char* var : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_RANK", "MPI_LOCALNRANKS"}) {
    if (std::getenv(var) != nullptr) return true;
  }
  return false;
}

void mpi_abort(int code) {
  MPI_Abort(MPI_COMM_WORLD, code);
  std::abort();  // MPI_Abort does not return; this satisfies [[noreturn]] if it ever does
}

std::unique_ptr<Transport> make_mpi_transport() { return std::make_unique<MpiTransport>(); }

}  // namespace dtrain::comm
