#include "comm/algorithms/collective.h"

#include <algorithm>

#include "comm/reduce.h"

namespace dtrain::comm::detail {

void Collective::post_send(std::vector<Request>& out, const void* data, std::size_t count, std::size_t elem, int peer) {
  std::size_t sent = 0;
  post_send_upto(out, data, count, elem, peer, sent, count, tag);
}

void Collective::post_send_upto(std::vector<Request>& out, const void* data, std::size_t count, std::size_t elem,
                                int peer, std::size_t& sent, std::size_t upto, int message_tag) {
  const auto* p = static_cast<const std::byte*>(data);
  const std::size_t step = chunk_elems(elem);
  for (std::size_t off = sent * step; sent < upto && off < count; ++sent, off += step) {
    out.push_back(transport.isend(p + off * elem, std::min(step, count - off) * elem, peer, message_tag));
  }
}

void Collective::post_recv(std::vector<Request>& out, void* data, std::size_t count, std::size_t elem, int peer) {
  auto* p = static_cast<std::byte*>(data);
  const std::size_t step = chunk_elems(elem);
  for (std::size_t off = 0; off < count; off += step) {
    out.push_back(transport.irecv(p + off * elem, std::min(step, count - off) * elem, peer, tag));
  }
}

void Collective::wait_all(std::vector<Request>& reqs) {
  transport.waitall(reqs, deadline, what);
  reqs.clear();
}

void Collective::cancel_all() noexcept {
  for (auto& l : lists) {
    transport.cancel(l);
    l.clear();
  }
}

void Collective::reduce(void* dst, const void* src, std::size_t count, DType dtype) {
  reduce_sum(dst, src, count, dtype);
  bytes_reduced += count * dtype_size(dtype);
}

std::byte* Collective::recv_slots(std::size_t max_count, std::size_t elem) {
  return scratch.get(kRecvSlots * slot_bytes(max_count, elem));
}

void Collective::exchange_reduce(const void* send, std::size_t send_count, int to, void* dst, std::size_t count,
                                 int from, DType dtype) {
  const std::size_t elem = dtype_size(dtype);
  const std::size_t step = chunk_elems(elem);
  const std::size_t slot = slot_bytes(count, elem);
  std::byte* slots = recv_slots(count, elem);
  auto& recvs = list(0);
  auto& sends = list(1);
  std::size_t posted = 0;  // elements whose receive is posted
  auto post_next = [&] {
    if (posted >= count) return;
    const std::size_t n = std::min(step, count - posted);
    recvs.push_back(transport.irecv(slots + (recvs.size() % kRecvSlots) * slot, n * elem, from, tag));
    posted += n;
  };
  for (std::size_t i = 0; i < kRecvSlots; ++i) post_next();
  PacedSend paced(*this, sends, send, send_count, elem, to, tag);
  for (std::size_t g = 0, off = 0; off < count; ++g, off += step) {
    wait(recvs[g]);
    reduce(static_cast<std::byte*>(dst) + off * elem, slots + (g % kRecvSlots) * slot, std::min(step, count - off),
           dtype);
    post_next();
    paced.arrived(g + 1);
  }
  recvs.clear();
  paced.finish();
  wait_all(sends);
}

void Collective::exchange(const void* send, std::size_t send_count, int to, void* recv, std::size_t recv_count,
                          int from, std::size_t elem) {
  auto& recvs = list(0);
  auto& sends = list(1);
  post_recv(recvs, recv, recv_count, elem, from);
  PacedSend paced(*this, sends, send, send_count, elem, to, tag);
  for (std::size_t g = 0; g < recvs.size(); ++g) {
    wait(recvs[g]);
    paced.arrived(g + 1);
  }
  recvs.clear();
  paced.finish();
  wait_all(sends);
}

}  // namespace dtrain::comm::detail
