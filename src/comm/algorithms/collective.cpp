#include "comm/algorithms/collective.h"

#include <algorithm>

#include "comm/reduce.h"
#include "tensor/allocator.h"

namespace dtrain::comm::detail {

Scratch::~Scratch() {
  if (data_ != nullptr) cpu_allocator().deallocate(data_, bytes_);
}

std::byte* Scratch::get(std::size_t bytes) {
  if (bytes > bytes_) {
    if (data_ != nullptr) cpu_allocator().deallocate(data_, bytes_);
    data_ = nullptr;
    data_ = static_cast<std::byte*>(cpu_allocator().allocate(bytes));
    bytes_ = bytes;
  }
  return data_;
}

void Collective::post_send(std::vector<Request>& out, const void* data, std::size_t count, std::size_t elem, int peer) {
  const auto* p = static_cast<const std::byte*>(data);
  const std::size_t step = chunk_elems(elem);
  for (std::size_t off = 0; off < count; off += step) {
    out.push_back(transport.isend(p + off * elem, std::min(step, count - off) * elem, peer, tag));
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

void Collective::exchange_reduce(const void* send, std::size_t send_count, int to, void* dst, void* tmp,
                                 std::size_t count, int from, DType dtype) {
  const std::size_t elem = dtype_size(dtype);
  auto& recvs = list(0);
  auto& sends = list(1);
  post_recv(recvs, tmp, count, elem, from);
  post_send(sends, send, send_count, elem, to);
  const std::size_t step = chunk_elems(elem);
  for (std::size_t i = 0; i < recvs.size(); ++i) {
    wait(recvs[i]);
    const std::size_t off = i * step;
    reduce(static_cast<std::byte*>(dst) + off * elem, static_cast<std::byte*>(tmp) + off * elem,
           std::min(step, count - off), dtype);
  }
  recvs.clear();
  wait_all(sends);
}

void Collective::exchange(const void* send, std::size_t send_count, int to, void* recv, std::size_t recv_count,
                          int from, std::size_t elem) {
  auto& recvs = list(0);
  auto& sends = list(1);
  post_recv(recvs, recv, recv_count, elem, from);
  post_send(sends, send, send_count, elem, to);
  wait_all(recvs);
  wait_all(sends);
}

}  // namespace dtrain::comm::detail
