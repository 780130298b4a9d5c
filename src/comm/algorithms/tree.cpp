#include "comm/algorithms/tree.h"

#include <algorithm>
#include <array>
#include <bit>
#include <span>

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
  auto* d = static_cast<std::byte*>(data);
  const std::size_t step = c.chunk_elems(elem);
  const std::size_t chunks = (count + step - 1) / step;
  auto chunk_at = [&](std::size_t k) { return d + k * step * elem; };
  auto chunk_len = [&](std::size_t k) { return std::min(step, count - k * step); };

  // Children in increasing distance (their subtrees finish first): a fixed order of additions,
  // so every run rounds the same way. Each child's chunks land in its own receive window.
  const int top = subtree_bit(r, p);
  std::array<int, 32> kid_ranks{};  // at most log2(p) < 32 children
  std::size_t n_kids = 0;
  for (int m = 1; m < top; m <<= 1) {
    if (r + m < p) kid_ranks[n_kids++] = r + m;
  }
  const std::span<const int> kids(kid_ranks.data(), n_kids);
  const std::size_t slot = c.slot_bytes(count, elem);
  std::byte* slots = c.scratch.get(kids.size() * kRecvSlots * slot);  // a leaf needs none
  auto window = [&](std::size_t i, std::size_t k) { return slots + (i * kRecvSlots + k % kRecvSlots) * slot; };
  auto& up = c.list(0);         // chunk k of the partial sum to the parent, or to nobody at the root
  auto& down = c.list(1);       // the sum of chunk k from the parent
  auto& forward = c.list(2);    // sums sent to the children
  auto& from_kids = c.list(3);  // chunk k of child i at k * kids + i
  auto post_kid_chunk = [&](std::size_t k) {
    if (k >= chunks) return;
    for (std::size_t i = 0; i < kids.size(); ++i) {
      from_kids.push_back(c.transport.irecv(window(i, k), chunk_len(k) * elem, kids[i], c.tag));
    }
  };
  auto send_down = [&](std::size_t k) {  // largest subtree first: it has the longest way to go
    for (std::size_t i = kids.size(); i-- > 0;) {
      forward.push_back(c.transport.isend(chunk_at(k), chunk_len(k) * elem, kids[i], c.tag));
    }
  };
  // Sums move along between the chunks without blocking: the receive of sum j is posted once
  // chunk j's send has completed (the sum lands where that chunk was sent from), and a sum that
  // has arrived goes on to the children at once. A rank blocks on a sum only when `in_flight`
  // chunks it sent up have not come back summed: 2L chunks cover the hops up to the root and back,
  // and kLinkWindowBytes a link whose far end answers late (collective.h). Every
  // rank has the same bound, so the waits go in lockstep: a parent has forwarded sum k - in_flight
  // before it waits for its children's chunk k + 1, which they send once they have that sum.
  const std::size_t in_flight =
      c.chunks_in_flight(elem, 2 * static_cast<std::size_t>(std::bit_width(static_cast<unsigned>(p - 1))));
  std::size_t posted = 0, forwarded = 0;  // sums whose receive is posted; sums sent on
  // Posts and forwards what is ready among the first `sent` chunks' sums, waiting for the
  // first `until` of them to be forwarded.
  auto move_sums = [&](std::size_t sent, std::size_t until) {
    auto ready = [&](Request& req, std::size_t j) {
      if (j >= until) return c.test(req);
      c.wait(req);
      return true;
    };
    for (; posted < sent && ready(up[posted], posted); ++posted) {
      down.push_back(c.transport.irecv(chunk_at(posted), chunk_len(posted) * elem, r - top, c.tag));
    }
    for (; forwarded < posted && ready(down[forwarded], forwarded); ++forwarded) send_down(forwarded);
  };
  for (std::size_t k = 0; k < kRecvSlots; ++k) post_kid_chunk(k);
  for (std::size_t k = 0; k < chunks; ++k) {
    for (std::size_t i = 0; i < kids.size(); ++i) {
      c.wait(from_kids[k * kids.size() + i]);
      c.reduce(chunk_at(k), window(i, k), chunk_len(k), dtype);
    }
    post_kid_chunk(k + kRecvSlots);
    if (r == 0) {
      send_down(k);
      continue;
    }
    up.push_back(c.transport.isend(chunk_at(k), chunk_len(k) * elem, r - top, c.tag));
    move_sums(k + 1, k + 1 > in_flight ? k + 1 - in_flight : 0);
  }
  if (r != 0) move_sums(chunks, chunks);
  up.clear();
  down.clear();
  from_kids.clear();
  c.wait_all(forward);
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
  // The reduce mirrors the broadcast: each child sends its whole vector up once.
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
  // Both phases at once: beta on the larger direction, plus one chunk per hop of the first
  // chunk's way up and down (the pipeline's fill). A vector of few chunks has little to overlap:
  // never more than the two directions one after the other (a one-chunk vector: 2L hops).
  const std::uint64_t fill = bytes / msgs;
  cost.beta_bytes = std::min(cost.bytes_sent + cost.bytes_received,
                             std::max(cost.bytes_sent, cost.bytes_received) + (cost.rounds - 1) * fill);
  return cost;
}

}  // namespace dtrain::comm::detail
