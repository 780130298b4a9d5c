#include "comm/algorithms/ring.h"

#include <algorithm>
#include <utility>

namespace dtrain::comm::detail {
namespace {

// The all-gather's messages carry their own tag, so its receives can be posted while
// scatter-reduce receives from the same peer are still to come (a tag's messages match receives in
// posting order). So do the scatter-reduce's step-0 sends of a rank's own block: paced by what
// arrives, they interleave with the forwarded sums of step 1. Tags are 32 * kind + algorithm
// (< 8; communicator.cpp), so + 8 and + 16 are free.
constexpr int kGatherTag = 8;
constexpr int kFirstBlockTag = 16;

// The all-gather's receives, posted in order (step 0's chunks first): gather_step0 posts the next
// chunk of step 0 (block r-1) once the scatter-reduce send that read the same chunk has completed.
struct GatherPosts {
  Collective& c;
  std::byte* d = nullptr;
  std::size_t count = 0, elem = 0;
  std::size_t posted = 0;  // step-0 chunks posted

  std::vector<Request>& recvs() { return c.list(1); }
  Block block0() const { return block_of(count, c.size(), mod(c.rank() - 1, c.size())); }
  std::size_t chunks0() const { return static_cast<std::size_t>(chunk_count(block0().count, elem, c.chunk_bytes)); }
  // `rs_sends` holds the scatter-reduce's step-0 sends of block r-1, chunk by chunk, at least up
  // to chunk `posted`.
  void post_step0(std::vector<Request>& rs_sends) {
    const Block b = block0();
    const std::size_t step = c.chunk_elems(elem), off = posted * step;
    c.wait(rs_sends[posted]);  // usually long done: the predecessor pulled it a step ago
    recvs().push_back(c.transport.irecv(d + (b.offset + off) * elem, std::min(step, b.count - off) * elem,
                                        mod(c.rank() - 1, c.size()), c.tag + kGatherTag));
    ++posted;
  }
};

// Scatter-reduce steps. Incoming chunks pass through the receive window (collective.h); step 0's
// own block goes out through list 4; reduced chunks of steps 0..p-3 are forwarded into list 2
// (they feed the next step). Those of the last
// step, this rank's finished block, are forwarded into list 3 as the all-gather's first sends
// when `gather` is set (allreduce), and then, chunk for chunk, the all-gather's step-0 receives
// are posted: the predecessor's finished chunks are pulled while they are still in its cache.
void scatter_reduce(Collective& c, std::byte* d, std::size_t count, DType dtype, GatherPosts* gather) {
  const int p = c.size(), r = c.rank();
  const int next = mod(r + 1, p), prev = mod(r - 1, p);
  const std::size_t elem = dtype_size(dtype);
  const std::size_t step = c.chunk_elems(elem);
  const std::size_t largest = block_of(count, p, 0).count;  // block 0 is the largest
  const std::size_t slot = c.slot_bytes(largest, elem);
  std::byte* slots = c.recv_slots(largest, elem);
  auto& recvs = c.list(0);  // receive g of the whole scatter-reduce is recvs[g], in slot g % kRecvSlots
  auto& sends = c.list(2);

  // The receive stream runs through the blocks of steps 0 .. p-2 in order; post_next posts its
  // next chunk (called once per slot up front, then whenever a slot has been consumed).
  int post_step = 0;
  std::size_t post_off = 0;
  auto post_next = [&] {
    for (; post_step <= p - 2; ++post_step, post_off = 0) {
      const std::size_t n = block_of(count, p, mod(r - 2 - post_step, p)).count;
      if (post_off < n) {
        const std::size_t m = std::min(step, n - post_off);
        const int tag = post_step == 0 ? c.tag + kFirstBlockTag : c.tag;
        recvs.push_back(c.transport.irecv(slots + (recvs.size() % kRecvSlots) * slot, m * elem, prev, tag));
        post_off += m;
        return;
      }
    }
  };
  for (std::size_t i = 0; i < kRecvSlots; ++i) post_next();
  // Step 0 sends this rank's own block r-1, which needs nothing received: sent all at once, every
  // rank's link would fill both ways at the start (collective.h, kLinkWindowBytes), so chunk k goes
  // once chunk k - window of the stream from the predecessor has arrived.
  const Block first = block_of(count, p, mod(r - 1, p));
  auto& first_sends = c.list(4);
  PacedSend first_send(c, first_sends, d + first.offset * elem, first.count, elem, next, c.tag + kFirstBlockTag);
  std::size_t g = 0;
  for (int s = 0; s <= p - 2; ++s) {
    const Block b = block_of(count, p, mod(r - 2 - s, p));
    const bool last = s == p - 2;
    for (std::size_t off = 0; off < b.count; off += step, ++g) {
      c.wait(recvs[g]);
      const std::size_t n = std::min(step, b.count - off);
      std::byte* dst = d + (b.offset + off) * elem;
      c.reduce(dst, slots + (g % kRecvSlots) * slot, n, dtype);
      if (!last) {
        sends.push_back(c.transport.isend(dst, n * elem, next, c.tag));
      }
      first_send.arrived(g + 1);
      if (last && gather != nullptr) {
        c.list(3).push_back(c.transport.isend(dst, n * elem, next, c.tag + kGatherTag));
        if (gather->posted < gather->chunks0()) gather->post_step0(first_sends);
      }
      post_next();
    }
  }
  recvs.clear();
  first_send.finish();
  // The all-gather overwrites the blocks these sends read from.
  c.wait_all(sends);
  c.wait_all(first_sends);
}

// All-gather steps: step s receives block (r-1-s) straight into place and forwards it. With
// `send_own` (allgather alone) it starts by sending this rank's block; in an allreduce the
// scatter-reduce already did and posted part of step 0's receives (`gather`).
void all_gather(Collective& c, GatherPosts& gather, bool send_own) {
  const int p = c.size(), r = c.rank();
  const int next = mod(r + 1, p), prev = mod(r - 1, p);
  const std::size_t elem = gather.elem, step = c.chunk_elems(elem);
  std::byte* d = gather.d;
  auto& recvs = gather.recvs();
  auto& sends = c.list(3);
  const int tag = c.tag + kGatherTag;
  if (send_own) {
    const Block own = block_of(gather.count, p, r);
    for (std::size_t off = 0; off < own.count; off += step) {
      sends.push_back(
          c.transport.isend(d + (own.offset + off) * elem, std::min(step, own.count - off) * elem, next, tag));
    }
  }
  for (int s = 0; s <= p - 2; ++s) {
    const Block b = block_of(gather.count, p, mod(r - 1 - s, p));
    for (std::size_t off = s == 0 ? gather.posted * step : 0; off < b.count; off += step) {
      recvs.push_back(c.transport.irecv(d + (b.offset + off) * elem, std::min(step, b.count - off) * elem, prev, tag));
    }
  }
  std::size_t k = 0;
  for (int s = 0; s <= p - 2; ++s) {
    const Block b = block_of(gather.count, p, mod(r - 1 - s, p));
    for (std::size_t off = 0; off < b.count; off += step, ++k) {
      c.wait(recvs[k]);
      if (s < p - 2) {
        sends.push_back(
            c.transport.isend(d + (b.offset + off) * elem, std::min(step, b.count - off) * elem, next, tag));
      }
    }
  }
  recvs.clear();
  c.wait_all(sends);
}

// Adds the messages and bytes of one block to a send or receive tally.
void tally(std::uint64_t& messages, std::uint64_t& bytes, std::size_t n, std::size_t elem, std::size_t chunk) {
  messages += chunk_count(n, elem, chunk);
  bytes += n * elem;
}

}  // namespace

void ring_allreduce(Collective& c, void* data, std::size_t count, DType dtype) {
  if (c.size() == 1 || count == 0) return;
  GatherPosts gather{c, static_cast<std::byte*>(data), count, dtype_size(dtype)};
  scatter_reduce(c, gather.d, count, dtype, &gather);
  all_gather(c, gather, false);
}

void ring_reduce_scatter(Collective& c, void* data, std::size_t count, DType dtype) {
  if (c.size() == 1 || count == 0) return;
  scatter_reduce(c, static_cast<std::byte*>(data), count, dtype, nullptr);
}

void ring_allgather(Collective& c, void* data, std::size_t count, std::size_t elem) {
  if (c.size() == 1 || count == 0) return;
  GatherPosts gather{c, static_cast<std::byte*>(data), count, elem};
  all_gather(c, gather, true);
}

CommCost ring_reduce_scatter_cost(int p, int rank, std::size_t count, std::size_t elem, std::size_t chunk) {
  CommCost cost;
  if (p == 1 || count == 0) return cost;
  for (int b = 0; b < p; ++b) {
    const std::size_t n = block_of(count, p, b).count;
    if (b != rank) tally(cost.messages_sent, cost.bytes_sent, n, elem, chunk);                      // blocks r-1-s
    if (b != mod(rank - 1, p)) tally(cost.messages_received, cost.bytes_received, n, elem, chunk);  // r-2-s
  }
  cost.bytes_reduced = cost.bytes_received;
  cost.rounds = static_cast<std::uint64_t>(p - 1);
  for (int s = 0; s <= p - 2; ++s) {
    cost.beta_bytes +=
        std::max(block_of(count, p, mod(rank - 1 - s, p)).count, block_of(count, p, mod(rank - 2 - s, p)).count) * elem;
  }
  return cost;
}

CommCost ring_allgather_cost(int p, int rank, std::size_t count, std::size_t elem, std::size_t chunk) {
  CommCost cost;
  if (p == 1 || count == 0) return cost;
  for (int b = 0; b < p; ++b) {
    const std::size_t n = block_of(count, p, b).count;
    if (b != mod(rank + 1, p)) tally(cost.messages_sent, cost.bytes_sent, n, elem, chunk);  // blocks r-s
    if (b != rank) tally(cost.messages_received, cost.bytes_received, n, elem, chunk);      // blocks r-1-s
  }
  cost.rounds = static_cast<std::uint64_t>(p - 1);
  for (int s = 0; s <= p - 2; ++s) {
    cost.beta_bytes +=
        std::max(block_of(count, p, mod(rank - s, p)).count, block_of(count, p, mod(rank - 1 - s, p)).count) * elem;
  }
  return cost;
}

CommCost ring_allreduce_cost(int p, int rank, std::size_t count, std::size_t elem, std::size_t chunk) {
  const CommCost a = ring_reduce_scatter_cost(p, rank, count, elem, chunk);
  const CommCost b = ring_allgather_cost(p, rank, count, elem, chunk);
  return {
      a.messages_sent + b.messages_sent,   a.bytes_sent + b.bytes_sent,       a.messages_received + b.messages_received,
      a.bytes_received + b.bytes_received, a.bytes_reduced + b.bytes_reduced, a.rounds + b.rounds,
      a.beta_bytes + b.beta_bytes};
}

}  // namespace dtrain::comm::detail
