// What every collective algorithm works with: the transport, the deadline of the current call,
// reusable scratch memory and request lists, and the chunked send/receive/reduce steps the
// algorithms are written in. Internal to comm/ (the Communicator builds one per call).
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include "comm/message_buffer.h"
#include "comm/transport.h"
#include "tensor/dtype.h"

namespace dtrain::comm::detail {

// Memory kept across calls: grows to the largest request and is never given back until the
// communicator dies, so steady-state collectives touch no fresh pages (about 11 us per 4 KiB
// page on the project's machines) and allocate nothing; in huge pages, as peers copy into and out
// of it (message_buffer.h).
class Scratch {
 public:
  // At least `bytes` bytes, 64-byte aligned, contents unspecified.
  std::byte* get(std::size_t bytes) { return buffer_.grow(bytes); }

 private:
  MessageBuffer buffer_;
};

// The partition every algorithm uses: `count` elements into `parts` contiguous blocks, the first
// count % parts blocks one element longer.
struct Block {
  std::size_t offset = 0;
  std::size_t count = 0;
};
inline Block block_of(std::size_t count, int parts, int i) {
  const auto p = static_cast<std::size_t>(parts);
  const auto k = static_cast<std::size_t>(i);
  const std::size_t base = count / p, extra = count % p;
  return {k * base + (k < extra ? k : extra), base + (k < extra ? 1 : 0)};
}
// Elements in blocks [first, last) of that partition.
inline Block blocks_range(std::size_t count, int parts, int first, int last) {
  const Block a = block_of(count, parts, first);
  const Block b = block_of(count, parts, last - 1);
  return {a.offset, b.offset + b.count - a.offset};
}

inline int mod(int a, int p) { return ((a % p) + p) % p; }

// Number of request lists a collective may use.
constexpr int kRequestLists = 5;

// Incoming chunks that are to be reduced land in a window of kRecvSlots chunk-sized scratch
// slots: chunk g of a stream goes to slot g % kRecvSlots, and the receive of chunk g + kRecvSlots
// is posted once chunk g has been added in. Two slots let a chunk arrive (network, DMA) while the
// previous one is reduced; the scratch stays a few chunks whatever the message size, and a reused
// slot is still in cache when the next chunk overwrites it (no write-back of a block-sized buffer).
constexpr std::size_t kRecvSlots = 2;

// Bytes a rank keeps on their way to a reducing rank before the sums of the first have come back
// (the tree's and one-to-all's pipelines), or ahead of what its peer has sent it (the ring's
// first step, the butterfly's exchanges): a link's worth when its far end answers late, its core
// busy computing (4 ms at 1 Gbit/s), and few enough that a 100 Mbit/s link's queue (tbf, 50 ms)
// does not fill in both directions at once, where each direction's acknowledgements wait behind
// the other's data. Between 2 hosts, f16, 32 KiB chunks: LeNet's double-buffered step over
// 1 Gbit/s took 99 ms with 2 chunks on their way, 91 with 8, 84 with 16, 82 with 32 (the ring:
// 82); a 6 MiB allreduce over 100 Mbit/s 528 ms with up to 16, 564 with 32 and 702 with no bound
// (503 ms at the link's rate).
constexpr std::size_t kLinkWindowBytes = std::size_t{512} << 10;

struct Collective {
  Transport& transport;
  Deadline deadline;
  std::string_view what;  // for error messages
  int tag;
  std::size_t chunk_bytes;
  Scratch& scratch;
  std::span<std::vector<Request>, kRequestLists> lists;  // reused; each starts empty
  std::uint64_t& bytes_reduced;

  int rank() const { return transport.rank(); }
  int size() const { return transport.size(); }
  std::vector<Request>& list(int i) { return lists[static_cast<std::size_t>(i)]; }

  std::size_t chunk_elems(std::size_t elem) const { return chunk_bytes / elem > 0 ? chunk_bytes / elem : 1; }
  // Chunks a rank may have sent whose sums have not come back: kLinkWindowBytes of them, and at
  // least `hops` (the pipeline's way there and back).
  std::size_t chunks_in_flight(std::size_t elem, std::size_t hops) const {
    return std::max(hops, kLinkWindowBytes / (chunk_elems(elem) * elem));
  }

  // Posts `count` elements of `elem` bytes as chunk messages to / from `peer`, appending requests.
  void post_send(std::vector<Request>& out, const void* data, std::size_t count, std::size_t elem, int peer);
  // Posts the chunks numbered sent .. upto-1 of such a send (fewer at its end) with `message_tag`
  // and advances `sent` (PacedSend below).
  void post_send_upto(std::vector<Request>& out, const void* data, std::size_t count, std::size_t elem, int peer,
                      std::size_t& sent, std::size_t upto, int message_tag);
  void post_recv(std::vector<Request>& out, void* data, std::size_t count, std::size_t elem, int peer);

  void wait(Request& r) { transport.wait(r, deadline, what); }
  // Whether `r` has finished (completing it), without waiting.
  bool test(Request& r) { return transport.test(r, what); }
  // Completes and clears the list.
  void wait_all(std::vector<Request>& reqs);
  // Cancels every unfinished request of every list (after an exception) and clears them.
  void cancel_all() noexcept;

  void reduce(void* dst, const void* src, std::size_t count, DType dtype);

  // Scratch for a receive window whose chunks hold at most `max_count` elements.
  std::byte* recv_slots(std::size_t max_count, std::size_t elem);
  std::size_t slot_bytes(std::size_t max_count, std::size_t elem) const {
    return std::min(max_count, chunk_elems(elem)) * elem;
  }

  // Receives `count` elements from `from` in chunks through a receive window and adds each chunk
  // into `dst` as it arrives, while `send_count` elements of `send` go to `to` (nothing when
  // send_count is 0), chunk k once chunk k - chunks_in_flight of the receive has arrived (the
  // link's window: a pair that sends both ways at once keeps each direction's queue short).
  // Uses lists 0 and 1.
  void exchange_reduce(const void* send, std::size_t send_count, int to, void* dst, std::size_t count, int from,
                       DType dtype);
  // Sends `send_count` elements to `to` while receiving `recv_count` from `from` into `recv`, the
  // send windowed as in exchange_reduce. Uses lists 0 and 1.
  void exchange(const void* send, std::size_t send_count, int to, void* recv, std::size_t recv_count, int from,
                std::size_t elem);
};

// A send paced by the stream that comes back from the peer: chunk k goes once chunk k - W of that
// stream has arrived (W = chunks_in_flight, the link's window). Construction posts the first W
// chunks; arrived(m) after m chunks have come in; finish() posts the rest.
class PacedSend {
 public:
  PacedSend(Collective& c, std::vector<Request>& out, const void* data, std::size_t count, std::size_t elem, int peer,
            int tag)
      : c_(c),
        out_(out),
        data_(data),
        count_(count),
        elem_(elem),
        peer_(peer),
        tag_(tag),
        window_(c.chunks_in_flight(elem, 2)) {
    arrived(0);
  }
  void arrived(std::size_t chunks) { post_upto(chunks + window_); }
  void finish() { post_upto(count_); }

 private:
  void post_upto(std::size_t chunks) { c_.post_send_upto(out_, data_, count_, elem_, peer_, sent_, chunks, tag_); }

  Collective& c_;
  std::vector<Request>& out_;
  const void* data_;
  std::size_t count_, elem_;
  int peer_, tag_;
  std::size_t window_, sent_ = 0;
};

}  // namespace dtrain::comm::detail
