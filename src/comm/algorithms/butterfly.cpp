#include "comm/algorithms/butterfly.h"

#include <algorithm>
#include <bit>

namespace dtrain::comm::detail {
namespace {

struct Layout {
  int q;      // ranks taking part in the butterfly (a power of two)
  int extra;  // e = p - q ranks folded into their odd neighbour
  int vrank;  // this rank's number among the q, or -1 for a folded (even, < 2e) rank
};

Layout layout_of(int p, int r) {
  const int q = static_cast<int>(std::bit_floor(static_cast<unsigned>(p)));
  const int e = p - q;
  const int v = r < 2 * e ? (r % 2 == 1 ? r / 2 : -1) : r - e;
  return {q, e, v};
}
int real_rank(const Layout& l, int v) { return v < l.extra ? 2 * v + 1 : v + l.extra; }

// Calls fn(partner_vrank, send_lo, send_hi, keep_lo, keep_hi) for the halving steps in order:
// the block range [lo, hi) a rank is responsible for shrinks to its kept half each step.
template <typename Fn>
void halving_steps(const Layout& l, Fn&& fn) {
  int lo = 0, hi = l.q;
  for (int d = l.q / 2; d >= 1; d /= 2) {
    const int mid = (lo + hi) / 2;
    const bool lower = (l.vrank & d) == 0;  // keep the lower half
    const int keep_lo = lower ? lo : mid, keep_hi = lower ? mid : hi;
    const int send_lo = lower ? mid : lo, send_hi = lower ? hi : mid;
    fn(l.vrank ^ d, send_lo, send_hi, keep_lo, keep_hi);
    lo = keep_lo;
    hi = keep_hi;
  }
}

// Phases 1-2: recursive halving then recursive doubling (Rabenseifner).
void halving_doubling(Collective& c, const Layout& l, std::byte* d, std::size_t count, DType dtype) {
  const std::size_t elem = dtype_size(dtype);
  halving_steps(l, [&](int partner, int send_lo, int send_hi, int keep_lo, int keep_hi) {
    const Block s = blocks_range(count, l.q, send_lo, send_hi);
    const Block k = blocks_range(count, l.q, keep_lo, keep_hi);
    const int peer = real_rank(l, partner);
    c.exchange_reduce(d + s.offset * elem, s.count, peer, d + k.offset * elem, k.count, peer, dtype);
  });
  // Replay the halving steps backwards: the range now held is the kept half, the partner holds
  // the sent half.
  struct Step {
    int partner, send_lo, send_hi, keep_lo, keep_hi;
  };
  Step steps[32];
  int n = 0;
  halving_steps(l, [&](int partner, int send_lo, int send_hi, int keep_lo, int keep_hi) {
    steps[n++] = {partner, send_lo, send_hi, keep_lo, keep_hi};
  });
  for (int i = n - 1; i >= 0; --i) {
    const Step& st = steps[i];
    const Block mine = blocks_range(count, l.q, st.keep_lo, st.keep_hi);
    const Block theirs = blocks_range(count, l.q, st.send_lo, st.send_hi);
    const int peer = real_rank(l, st.partner);
    c.exchange(d + mine.offset * elem, mine.count, peer, d + theirs.offset * elem, theirs.count, peer, elem);
  }
}

// Phase 1' for small vectors: recursive doubling, whole vectors each step. Both partners add
// the other's vector; a + b == b + a in IEEE arithmetic, so all ranks stay bitwise identical.
void recursive_doubling(Collective& c, const Layout& l, std::byte* d, std::byte* tmp, std::size_t count, DType dtype) {
  const std::size_t elem = dtype_size(dtype);
  for (int dist = 1; dist < l.q; dist <<= 1) {
    const int peer = real_rank(l, l.vrank ^ dist);
    c.post_recv(c.list(0), tmp, count, elem, peer);
    c.post_send(c.list(1), d, count, elem, peer);
    c.wait_all(c.list(0));
    c.wait_all(c.list(1));  // data is the send buffer: finish sending before adding into it
    c.reduce(d, tmp, count, dtype);
  }
}

}  // namespace

bool butterfly_uses_doubling(std::size_t bytes) { return bytes <= kButterflyDoublingMaxBytes; }

void butterfly_allreduce(Collective& c, void* data, std::size_t count, DType dtype) {
  const int p = c.size(), r = c.rank();
  if (p == 1 || count == 0) return;
  const std::size_t elem = dtype_size(dtype);
  auto* d = static_cast<std::byte*>(data);
  const Layout l = layout_of(p, r);
  const bool doubling = butterfly_uses_doubling(count * elem);

  // 0. fold
  if (r < 2 * l.extra) {
    if (l.vrank < 0) {
      c.post_send(c.list(1), d, count, elem, r + 1);
      c.wait_all(c.list(1));
      c.post_recv(c.list(0), d, count, elem, r + 1);  // 4. unfold
      c.wait_all(c.list(0));
      return;
    }
    c.exchange_reduce(nullptr, 0, 0, d, count, r - 1, dtype);
  }
  if (doubling) {
    recursive_doubling(c, l, d, c.scratch.get(count * elem), count, dtype);  // at most a few KiB
  } else {
    halving_doubling(c, l, d, count, dtype);
  }
  // 4. unfold
  if (r < 2 * l.extra) {
    c.post_send(c.list(1), d, count, elem, r - 1);
    c.wait_all(c.list(1));
  }
}

CommCost butterfly_allreduce_cost(int p, int r, std::size_t count, std::size_t elem, std::size_t chunk) {
  CommCost cost;
  if (p == 1 || count == 0) return cost;
  const Layout l = layout_of(p, r);
  const std::uint64_t whole_msgs = chunk_count(count, elem, chunk), whole = count * elem;
  if (r < 2 * l.extra) {
    if (l.vrank < 0) return {whole_msgs, whole, whole_msgs, whole, 0, 2, 2 * whole};  // sends, gets the result
    cost = {whole_msgs, whole, whole_msgs, whole, whole, 2, 2 * whole};  // adds one vector in, returns the sum
  }
  if (butterfly_uses_doubling(whole)) {
    const auto steps = static_cast<std::uint64_t>(std::countr_zero(static_cast<unsigned>(l.q)));
    cost.messages_sent += steps * whole_msgs;
    cost.messages_received += steps * whole_msgs;
    cost.bytes_sent += steps * whole;
    cost.bytes_received += steps * whole;
    cost.bytes_reduced += steps * whole;
    cost.rounds += steps;
    cost.beta_bytes += steps * whole;
    return cost;
  }
  halving_steps(l, [&](int, int send_lo, int send_hi, int keep_lo, int keep_hi) {
    const std::size_t s = blocks_range(count, l.q, send_lo, send_hi).count;
    const std::size_t k = blocks_range(count, l.q, keep_lo, keep_hi).count;
    // Halving sends s and receives k (reducing it); doubling sends k and receives s.
    cost.messages_sent += chunk_count(s, elem, chunk) + chunk_count(k, elem, chunk);
    cost.messages_received += chunk_count(k, elem, chunk) + chunk_count(s, elem, chunk);
    cost.bytes_sent += (s + k) * elem;
    cost.bytes_received += (s + k) * elem;
    cost.bytes_reduced += k * elem;
    cost.rounds += 2;
    cost.beta_bytes += 2 * std::max(s, k) * elem;
  });
  return cost;
}

}  // namespace dtrain::comm::detail
