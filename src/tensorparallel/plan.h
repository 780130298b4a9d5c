// Which layers of a chain tensor parallelism splits over T ranks, and how. The one rule that both
// the runtime (parallelize.h) and the performance model (perfmodel/tensor_parallel_cost.h) follow,
// so that what is priced is what runs:
//   a linear layer followed, through element-wise activations only, by another linear layer: the
//     first column-parallel without gather, the second row-parallel (Megatron-LM's MLP block,
//     Shoeybi et al. 2019, section 3: one allreduce forward, one backward);
//   any other linear layer: column-parallel, its output gathered;
//   a convolution: channel-parallel, its output gathered (ChainerMN's parallel convolution);
//   a layer whose split features T does not divide, and every other layer: whole on every rank
//     (the same input and parameters everywhere, so its gradients agree without communication).
// Only the chain's own layers are candidates: a composite layer (a residual block) stays whole.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace dtrain::tensorparallel {

enum class TensorSplit { kWhole, kColumn, kColumnGathered, kRow, kChannel };

// One layer of the chain: its Module::type() ("linear", "conv2d", "relu", ...) and, for linear
// layers and convolutions, its input and output features (channels).
struct SplitCandidate {
  std::string kind;
  std::int64_t in_features = 0, out_features = 0;
};

std::vector<TensorSplit> plan_tensor_split(const std::vector<SplitCandidate>& layers, int parts);

const char* split_name(TensorSplit split);
// Whether a layer of `kind` works on each feature alone, so it may sit between a column- and a
// row-parallel layer on the column layer's block of features.
bool elementwise_kind(const std::string& kind);

}  // namespace dtrain::tensorparallel
