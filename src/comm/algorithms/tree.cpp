#include "comm/algorithms/tree.h"

#include <algorithm>
#include <bit>

namespace dtrain::comm::detail {
namespace {

// Lowest set bit of v (v > 0), or the first power of two >= p for the root (v == 0): children
// of v are v + m for powers of two m below this, and v's parent is v - lowbit(v).
int subtree_bit(int v, int p) { return v == 0 ? static_cast<int>(std::bit_ceil(static_cast<unsigned>(p))) : (v & -v); }
int child_count(int v, int p) {
  int n = 0;
  for (int m = subtree_bit(v, p) >> 1; m > 0; m >>= 1) n += v + m < p ? 1 : 0;
  return n;
}

}  // namespace

void tree_allreduce(Collective& c, void* data, std::size_t count, DType dtype) {
  const int p = c.size(), r = c.rank();
  if (p == 1 || count == 0) return;
  const std::size_t elem = dtype_size(dtype);
  // Reduce: receive from children in increasing distance (their subtrees finish first), then
  // hand the partial sum to the parent.
  const int top = subtree_bit(r, p);
  for (int m = 1; m < top; m <<= 1) {
    if (r + m < p) c.exchange_reduce(nullptr, 0, 0, data, count, r + m, dtype);
  }
  if (r != 0) {
    c.post_send(c.list(1), data, count, elem, r - top);
    c.wait_all(c.list(1));  // the broadcast overwrites data
  }
  broadcast_tree(c, data, count, elem, 0);
}

void broadcast_tree(Collective& c, void* data, std::size_t count, std::size_t elem, int root) {
  const int p = c.size();
  if (p == 1 || count == 0) return;
  const int v = mod(c.rank() - root, p);
  const int top = subtree_bit(v, p);
  auto* d = static_cast<std::byte*>(data);
  auto& recvs = c.list(0);
  auto& sends = c.list(1);
  const std::size_t step = c.chunk_elems(elem);
  if (v != 0) c.post_recv(recvs, d, count, elem, mod(v - top + root, p));
  for (std::size_t off = 0, i = 0; off < count; off += step, ++i) {
    if (v != 0) c.wait(recvs[i]);
    const std::size_t n = std::min(step, count - off);
    for (int m = top >> 1; m > 0; m >>= 1) {
      if (v + m < p) sends.push_back(c.transport.isend(d + off * elem, n * elem, mod(v + m + root, p), c.tag));
    }
  }
  recvs.clear();
  c.wait_all(sends);
}

CommCost broadcast_tree_cost(int p, int rank, std::size_t count, std::size_t elem, std::size_t chunk, int root) {
  CommCost cost;
  if (p == 1 || count == 0) return cost;
  const int v = mod(rank - root, p);
  const std::uint64_t msgs = chunk_count(count, elem, chunk), bytes = count * elem;
  const auto kids = static_cast<std::uint64_t>(child_count(v, p));
  cost.messages_sent = kids * msgs;
  cost.bytes_sent = kids * bytes;
  if (v != 0) {
    cost.messages_received = msgs;
    cost.bytes_received = bytes;
  }
  // Depth of the tree below and above this rank: the broadcast finishes after ceil(log2 p) steps.
  cost.rounds = static_cast<std::uint64_t>(std::bit_width(static_cast<unsigned>(p - 1)));
  cost.beta_bytes = cost.bytes_sent + cost.bytes_received;  // every step goes one way
  return cost;
}

CommCost tree_allreduce_cost(int p, int rank, std::size_t count, std::size_t elem, std::size_t chunk) {
  CommCost cost = broadcast_tree_cost(p, rank, count, elem, chunk, 0);
  if (p == 1 || count == 0) return cost;
  // The reduce phase mirrors the broadcast: each child sends its whole vector up once.
  const std::uint64_t msgs = chunk_count(count, elem, chunk), bytes = count * elem;
  const auto kids = static_cast<std::uint64_t>(child_count(rank, p));
  cost.messages_received += kids * msgs;
  cost.bytes_received += kids * bytes;
  cost.bytes_reduced = kids * bytes;
  if (rank != 0) {
    cost.messages_sent += msgs;
    cost.bytes_sent += bytes;
  }
  cost.rounds *= 2;
  cost.beta_bytes = cost.bytes_sent + cost.bytes_received;
  return cost;
}

}  // namespace dtrain::comm::detail
