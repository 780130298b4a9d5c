// A Transport wrapper that counts what passes through it: messages and bytes posted for sending
// and receiving. Tests compare these counts with each algorithm's cost function (the numbers the
// performance model charges), so a change to an algorithm that changes its traffic must change
// its cost function too.
#pragma once

#include <cstdint>

#include "comm/algorithm.h"
#include "comm/transport.h"

namespace dtrain::comm {

class InstrumentedTransport final : public Transport {
 public:
  // Forwards to `inner`, which must outlive this wrapper.
  explicit InstrumentedTransport(Transport& inner) : inner_(inner) {}

  int rank() const override { return inner_.rank(); }
  int size() const override { return inner_.size(); }
  std::string_view name() const override { return inner_.name(); }

  Request isend(const void* data, std::size_t bytes, int peer, int tag) override;
  Request irecv(void* data, std::size_t bytes, int peer, int tag) override;
  void waitall(std::span<Request> requests, const Deadline& deadline, std::string_view what) override {
    inner_.waitall(requests, deadline, what);
  }
  bool test(Request& request, std::string_view what) override { return inner_.test(request, what); }
  void cancel(std::span<Request> requests) noexcept override { inner_.cancel(requests); }
  bool has_native_allreduce() const override { return inner_.has_native_allreduce(); }
  void native_allreduce(void* data, std::size_t count, DType dtype) override {
    inner_.native_allreduce(data, count, dtype);
  }
  std::unique_ptr<SharedRegion> allocate_shared(std::size_t bytes_per_rank, const Deadline& deadline) override {
    return inner_.allocate_shared(bytes_per_rank, deadline);
  }
  void throw_if_aborted() const override { inner_.throw_if_aborted(); }

  // Counts since construction or the last reset (bytes_reduced and rounds stay 0: the transport
  // cannot see them).
  const CommCost& counts() const { return counts_; }
  void reset() { counts_ = {}; }

 private:
  Transport& inner_;
  CommCost counts_;
};

}  // namespace dtrain::comm
