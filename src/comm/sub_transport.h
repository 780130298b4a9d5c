// A transport over a subset of another's ranks (MPI_Comm_split's group, without a new MPI
// communicator): rank i of the subset is the parent's members[i], and every message goes through
// the parent with its tag unchanged. A pipeline with data-parallel replicas uses two kinds: the K
// stages of one replica (point-to-point between neighbours) and the replicas of one stage (its
// gradients' allreduce). Their peers never overlap, so messages of the two in flight at once
// cannot match each other's receives.
//
// Errors name the parent's ranks, so a timeout says which process did not answer. The subset
// shares no memory (allocate_shared gives null: the shm allreduce is not offered) and has no
// native allreduce.
#pragma once

#include <string>
#include <vector>

#include "comm/transport.h"

namespace dtrain::comm {

class SubTransport final : public Transport {
 public:
  // `members`: distinct parent ranks, the calling rank among them. `parent` must outlive this.
  SubTransport(Transport& parent, std::vector<int> members);

  int rank() const override { return rank_; }
  int size() const override { return static_cast<int>(members_.size()); }
  std::string_view name() const override { return parent_.name(); }
  Request isend(const void* data, std::size_t bytes, int peer, int tag) override;
  Request irecv(void* data, std::size_t bytes, int peer, int tag) override;
  void waitall(std::span<Request> requests, const Deadline& deadline, std::string_view what) override;
  bool test(Request& request, std::string_view what) override;
  void cancel(std::span<Request> requests) noexcept override { parent_.cancel(requests); }
  void throw_if_aborted() const override { parent_.throw_if_aborted(); }

  // The parent rank of subset rank `r`.
  int parent_rank(int r) const { return members_.at(static_cast<std::size_t>(r)); }

 private:
  std::string describe(std::string_view what) const;

  Transport& parent_;
  std::vector<int> members_;
  int rank_ = -1;
};

}  // namespace dtrain::comm
