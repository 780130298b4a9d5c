#include "parallel/shared_weights.h"

#include <cstring>

namespace dtrain {
namespace {

constexpr std::size_t kAlign = 64;  // a cache line: no two tensors share one

std::size_t aligned(std::size_t bytes) { return (bytes + kAlign - 1) / kAlign * kAlign; }

void barrier(CommWorker& worker) {
  worker.run([](comm::Communicator& c) { c.barrier(); });
}

}  // namespace

bool SharedWeights::supported(const std::vector<Variable>& params) {
  for (const Variable& p : params) {
    if (p.data().layout() != Layout::kPlain || p.data().device().type != DeviceType::kCPU) return false;
  }
  return true;
}

std::vector<Optimizer::Range> bucket_block_ranges(const BucketLayout& buckets, const std::vector<std::int64_t>& numels,
                                                  int rank, int ranks) {
  std::vector<Optimizer::Range> out;
  for (std::size_t i = 0; i < numels.size(); ++i) {
    const auto [begin, end] = summed_slice(buckets, i, numels[i], rank, ranks);
    out.push_back({begin, end});
  }
  return out;
}

SharedWeights::SharedWeights(std::vector<Variable> params, Optimizer& optimizer, CommWorker& worker,
                             const BucketLayout& buckets)
    : params_(std::move(params)), optimizer_(optimizer), worker_(worker) {
  DT_CHECK(supported(params_), "shared weights need plain CPU parameters");
  optimizer_.ensure_state();
  std::size_t bytes = 0;
  for (const Variable& p : params_) bytes += aligned(p.data().nbytes());
  for (const auto& [name, t] : optimizer_.state()) bytes += aligned(t.nbytes());
  std::span<std::byte> region;
  worker_.run([&](comm::Communicator& c) { region = c.allocate_shared_common(bytes); });
  DT_CHECK(region.size() == bytes, "shared weights need ranks that share memory");

  const comm::Communicator& comm = worker_.communicator();
  const bool writer = comm.rank() == 0;
  std::size_t used = 0;
  // A tensor like t in the region; rank 0 copies t's values there, the others only address it.
  const auto move = [&](const Tensor& t) {
    Tensor moved = Tensor::over_external(region.data() + used, t.shape(), t.dtype());
    used += aligned(t.nbytes());
    if (writer) std::memcpy(moved.raw_data(), t.raw_data(), t.nbytes());
    return moved;
  };
  for (Variable& p : params_) p.data() = move(p.data());
  optimizer_.relocate_state(move);
  barrier(worker_);  // rank 0's values are in place before any rank reads them

  std::vector<std::int64_t> numels;
  for (const Variable& p : params_) numels.push_back(p.data().numel());
  part_ = bucket_block_ranges(buckets, numels, comm.rank(), comm.size());
  // A layer-wise optimizer's norms: each rank's parts summed over the ranks, identically on each.
  if (optimizer_.layerwise()) {
    optimizer_.set_norm_reducer(exact_sum_through(worker_));
  }
}

SharedWeights::~SharedWeights() {
  optimizer_.set_norm_reducer({});
  for (Variable& p : params_) p.data() = p.data().clone();
  optimizer_.relocate_state([](const Tensor& t) { return t.clone(); });
}

void SharedWeights::update() {
  optimizer_.step_ranges(part_);
  barrier(worker_);
}

}  // namespace dtrain
