#include "comm/sub_transport.h"

#include <fmt/format.h>

#include <algorithm>

#include "core/error.h"

namespace dtrain::comm {

SubTransport::SubTransport(Transport& parent, std::vector<int> members)
    : parent_(parent), members_(std::move(members)) {
  for (std::size_t i = 0; i < members_.size(); ++i) {
    DT_CHECK(members_[i] >= 0 && members_[i] < parent.size(), "member rank {} of {}", members_[i], parent.size());
    DT_CHECK(std::count(members_.begin(), members_.end(), members_[i]) == 1, "rank {} twice", members_[i]);
    if (members_[i] == parent.rank()) rank_ = static_cast<int>(i);
  }
  DT_CHECK(rank_ >= 0, "rank {} is not a member of its own subset", parent.rank());
}

Request SubTransport::isend(const void* data, std::size_t bytes, int peer, int tag) {
  check_peer_and_tag(*this, peer, tag, "isend");
  return parent_.isend(data, bytes, parent_rank(peer), tag);
}

Request SubTransport::irecv(void* data, std::size_t bytes, int peer, int tag) {
  check_peer_and_tag(*this, peer, tag, "irecv");
  return parent_.irecv(data, bytes, parent_rank(peer), tag);
}

std::string SubTransport::describe(std::string_view what) const {
  return fmt::format("{} (among ranks {})", what, fmt::join(members_, ","));
}

void SubTransport::waitall(std::span<Request> requests, const Deadline& deadline, std::string_view what) {
  parent_.waitall(requests, deadline, describe(what));
}

bool SubTransport::test(Request& request, std::string_view what) { return parent_.test(request, describe(what)); }

}  // namespace dtrain::comm
