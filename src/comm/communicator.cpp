#include "comm/communicator.h"

#include <fmt/format.h>

#include <cstring>

#include "comm/algorithms/barrier.h"
#include "comm/algorithms/butterfly.h"
#include "comm/algorithms/mpi_native.h"
#include "comm/algorithms/one_to_all.h"
#include "comm/algorithms/ring.h"
#include "comm/algorithms/tree.h"
#include "comm/reduce.h"
#include "core/error.h"
#include "tensor/tensor.h"

namespace dtrain::comm {
namespace {

// Message tags: 32 * kind + algorithm (< 8), so ranks that disagree on the collective or the
// algorithm never match each other's messages; an algorithm may add 8, 16 or 24 for a second
// stream to the same peer (ring.cpp).
enum Kind { kAllreduce = 1, kBroadcast = 2, kAllgather = 3, kReduceScatter = 4, kBarrier = 5 };

}  // namespace

Communicator::Communicator(Transport& transport, const CommOptions& options)
    : transport_(&transport), options_(options), shared_(std::make_unique<detail::SharedMemory>()) {
  for (auto& l : lists_) l.reserve(64);
}

Communicator::Communicator(std::unique_ptr<Transport> transport, const CommOptions& options)
    : Communicator(*transport, options) {
  owned_ = std::move(transport);
}

Communicator::~Communicator() = default;

template <typename Body>
void Communicator::run(int kind, Algorithm algorithm, Body&& body) {
  detail::Collective c{*transport_,
                       Deadline::after(options_.timeout_seconds),
                       std::string_view(what_.data()),
                       32 * kind + static_cast<int>(algorithm),
                       options_.chunk_bytes,
                       scratch_,
                       lists_,
                       stats_.bytes_reduced};
  try {
    body(c);
  } catch (...) {
    c.cancel_all();
    shared_->abandon();
    throw;
  }
  ++stats_.collectives;
}

void Communicator::allreduce(void* data, std::size_t count, DType dtype, Algorithm algorithm) {
  allreduce_then_scale(data, count, dtype, algorithm, nullptr);
}

bool Communicator::allreduce_scaled(float* data, std::size_t count, float scale, Algorithm algorithm) {
  return allreduce_then_scale(data, count, DType::kF32, algorithm, &scale);
}

bool Communicator::reduce_scatter_scaled(float* data, std::size_t count, float scale, Algorithm algorithm) {
  return allreduce_then_scale(data, count, DType::kF32, algorithm, &scale, true);
}

bool Communicator::allreduce_then_scale(void* data, std::size_t count, DType dtype, Algorithm algorithm,
                                        const float* scale, bool own_block_only) {
  check_reducible(dtype, "allreduce");
  if (algorithm == Algorithm::kMpi && !transport_->has_native_allreduce()) {
    transport_->native_allreduce(data, count, dtype);  // throws the InputError explaining why
  }
  if (count > 0 && data == nullptr) throw InputError("allreduce: null buffer");
  const Algorithm a = algorithm == Algorithm::kAuto ? choose_algorithm(size(), count * dtype_size(dtype)) : algorithm;
  *fmt::format_to_n(what_.data(), what_.size() - 1, "allreduce({}) of {} {}", algorithm_name(a), count,
                    dtype_name(dtype))
       .out = '\0';
  bool finite = true;
  run(kAllreduce, a, [&](detail::Collective& c) {
    switch (a) {
      case Algorithm::kRing:
        detail::ring_allreduce(c, data, count, dtype);
        break;
      case Algorithm::kTree:
        detail::tree_allreduce(c, data, count, dtype);
        break;
      case Algorithm::kButterfly:
        detail::butterfly_allreduce(c, data, count, dtype);
        break;
      case Algorithm::kOneToAll:
        detail::onetoall_allreduce(c, data, count, dtype);
        break;
      case Algorithm::kMpi:
        if (count > 0) detail::mpi_allreduce(c, data, count, dtype);
        break;
      case Algorithm::kShm:
        if (!shared_->available(c.transport, c.deadline)) {
          throw InputError(
              fmt::format("allreduce algorithm 'shm' needs every rank on one host, sharing memory; these {} ranks "
                          "cannot (transport '{}'); pick ring|tree|butterfly|onetoall|mpi|auto",
                          size(), transport_->name()));
        }
        finite = shared_->allreduce(c, data, count, dtype, scale, own_block_only);
        return;  // scaled and checked inside
      case Algorithm::kAuto:
        throw InternalError("auto resolved above");
    }
    if (scale != nullptr) finite = scale_all_finite(static_cast<float*>(data), count, *scale);
  });
  return finite;
}

void Communicator::allreduce(const Tensor& tensor, Algorithm algorithm) {
  if (tensor.device() != Device::cpu()) {
    throw InputError(fmt::format("allreduce: tensor {} is not on the CPU", tensor.describe()));
  }
  allreduce(tensor.raw_data(), static_cast<std::size_t>(tensor.numel()), tensor.dtype(), algorithm);
}

void Communicator::broadcast(void* data, std::size_t bytes, int root) {
  if (root < 0 || root >= size()) {
    throw InputError(fmt::format("broadcast: root {} is not a rank of this {}-rank world", root, size()));
  }
  *fmt::format_to_n(what_.data(), what_.size() - 1, "broadcast of {} B from rank {}", bytes, root).out = '\0';
  run(kBroadcast, Algorithm::kTree, [&](detail::Collective& c) { detail::broadcast_tree(c, data, bytes, 1, root); });
}

void Communicator::allgather(void* data, std::size_t bytes_per_rank) {
  *fmt::format_to_n(what_.data(), what_.size() - 1, "allgather of {} B per rank", bytes_per_rank).out = '\0';
  run(kAllgather, Algorithm::kRing, [&](detail::Collective& c) {
    detail::ring_allgather(c, data, bytes_per_rank * static_cast<std::size_t>(size()), 1);
  });
}

void Communicator::allgather(const void* mine, void* all, std::size_t bytes_per_rank) {
  if (bytes_per_rank > 0) {
    std::memcpy(static_cast<std::byte*>(all) + static_cast<std::size_t>(rank()) * bytes_per_rank, mine, bytes_per_rank);
  }
  allgather(all, bytes_per_rank);
}

void Communicator::reduce_scatter(void* data, std::size_t count_per_rank, DType dtype) {
  check_reducible(dtype, "reduce_scatter");
  *fmt::format_to_n(what_.data(), what_.size() - 1, "reduce_scatter of {} {} per rank", count_per_rank,
                    dtype_name(dtype))
       .out = '\0';
  run(kReduceScatter, Algorithm::kRing, [&](detail::Collective& c) {
    detail::ring_reduce_scatter(c, data, count_per_rank * static_cast<std::size_t>(size()), dtype);
  });
}

bool Communicator::shares_memory() {
  return shared_->available(*transport_, Deadline::after(options_.timeout_seconds));
}

std::span<std::byte> Communicator::allocate_shared(std::size_t bytes) {
  return shared_->allocate(*transport_, bytes, Deadline::after(options_.timeout_seconds));
}

std::span<std::byte> Communicator::allocate_shared_common(std::size_t bytes) {
  return shared_->allocate_common(*transport_, 0, bytes, Deadline::after(options_.timeout_seconds));
}

void Communicator::barrier() {
  *fmt::format_to_n(what_.data(), what_.size() - 1, "barrier").out = '\0';
  run(kBarrier, Algorithm::kRing, [&](detail::Collective& c) { detail::dissemination_barrier(c); });
}

}  // namespace dtrain::comm
