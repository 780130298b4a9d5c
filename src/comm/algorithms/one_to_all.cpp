#include "comm/algorithms/one_to_all.h"

#include <algorithm>
#include <utility>

namespace dtrain::comm::detail {

void onetoall_allreduce(Collective& c, void* data, std::size_t count, DType dtype) {
  const int p = c.size(), r = c.rank();
  if (p == 1 || count == 0) return;
  const std::size_t elem = dtype_size(dtype);
  auto* d = static_cast<std::byte*>(data);
  const std::size_t step = c.chunk_elems(elem);
  const std::size_t chunks = (count + step - 1) / step;
  auto chunk_at = [&](std::size_t k) { return d + k * step * elem; };
  auto chunk_len = [&](std::size_t k) { return std::min(step, count - k * step); };
  if (r != 0) {
    // The summed chunk k lands where chunk k was sent from, so its receive is posted as soon as
    // that send has completed (tested between sends): the sums flow back while later chunks still
    // go out (both directions of the link busy). Chunk k goes once sum k - in_flight is back
    // (collective.h: kLinkWindowBytes), so every worker has sent the chunks of the sums it awaits.
    auto& sends = c.list(1);
    auto& recvs = c.list(0);
    const std::size_t in_flight = c.chunks_in_flight(elem, 2);
    std::size_t posted = 0;                    // sums whose receive is posted
    auto post_sums = [&](std::size_t until) {  // waits for the sends before `until`, tests the rest
      for (; posted < sends.size() && (posted < until ? (c.wait(sends[posted]), true) : c.test(sends[posted]));
           ++posted) {
        recvs.push_back(c.transport.irecv(chunk_at(posted), chunk_len(posted) * elem, 0, c.tag));
      }
    };
    for (std::size_t k = 0; k < chunks; ++k) {
      if (k >= in_flight) {
        post_sums(k - in_flight + 1);
        c.wait(recvs[k - in_flight]);
      }
      sends.push_back(c.transport.isend(chunk_at(k), chunk_len(k) * elem, 0, c.tag));
      post_sums(0);
    }
    post_sums(chunks);
    sends.clear();
    c.wait_all(recvs);
    return;
  }
  const auto workers = static_cast<std::size_t>(p - 1);
  // Two halves of p-1 chunk slots: chunk k is received into half k % 2.
  std::byte* tmp = c.scratch.get(2 * workers * step * elem);
  auto slot = [&](std::size_t k, int src) {
    return tmp + ((k % 2) * workers + static_cast<std::size_t>(src - 1)) * step * elem;
  };
  auto& recvs = c.list(0);
  auto& ahead = c.list(2);
  auto& sends = c.list(1);
  auto post_chunk = [&](std::size_t k, std::vector<Request>& out) {
    for (int src = 1; src < p; ++src) out.push_back(c.transport.irecv(slot(k, src), chunk_len(k) * elem, src, c.tag));
  };
  post_chunk(0, recvs);
  for (std::size_t k = 0; k < chunks; ++k) {
    if (k + 1 < chunks) post_chunk(k + 1, ahead);
    for (int src = 1; src < p; ++src) {  // fixed order: the same rounding in every run
      c.wait(recvs[static_cast<std::size_t>(src - 1)]);
      c.reduce(chunk_at(k), slot(k, src), chunk_len(k), dtype);
    }
    for (int dst_rank = 1; dst_rank < p; ++dst_rank) {
      sends.push_back(c.transport.isend(chunk_at(k), chunk_len(k) * elem, dst_rank, c.tag));
    }
    recvs.clear();
    std::swap(recvs, ahead);
  }
  c.wait_all(sends);
}

CommCost onetoall_allreduce_cost(int p, int rank, std::size_t count, std::size_t elem, std::size_t chunk) {
  if (p == 1 || count == 0) return {};
  const std::uint64_t msgs = chunk_count(count, elem, chunk), bytes = count * elem;
  const std::uint64_t peers = rank == 0 ? static_cast<std::uint64_t>(p - 1) : 1;
  // Rank 0 receives chunk k+1 while it sends chunk k; a worker receives sum k while it sends
  // chunk k+1. Both pipelines keep both directions busy, so a rank pays beta on the larger of
  // its two directions, (p-1) n at rank 0 and n at a worker, plus the one chunk that fills the
  // pipeline (the whole vector when it is one chunk: then nothing overlaps).
  const std::uint64_t fill = bytes / msgs;
  return {peers * msgs,
          peers * bytes,
          peers * msgs,
          peers * bytes,
          rank == 0 ? peers * bytes : 0,
          2 * peers,
          peers * bytes + peers * fill};
}

}  // namespace dtrain::comm::detail
