#include "comm/algorithms/barrier.h"

namespace dtrain::comm::detail {

void dissemination_barrier(Collective& c) {
  const int p = c.size(), r = c.rank();
  for (int dist = 1; dist < p; dist <<= 1) {
    auto& l = c.list(0);
    l.push_back(c.transport.irecv(nullptr, 0, mod(r - dist, p), c.tag));
    l.push_back(c.transport.isend(nullptr, 0, mod(r + dist, p), c.tag));
    c.wait_all(l);
  }
}

CommCost dissemination_barrier_cost(int p) {
  CommCost cost;
  for (int dist = 1; dist < p; dist <<= 1) {
    ++cost.messages_sent;
    ++cost.messages_received;
    ++cost.rounds;
  }
  return cost;
}

}  // namespace dtrain::comm::detail
