#include "tensorparallel/plan.h"

#include <array>
#include <string_view>

namespace dtrain::tensorparallel {

bool elementwise_kind(const std::string& kind) {
  static constexpr std::array<std::string_view, 4> kElementwise{"relu", "sigmoid", "tanh", "gelu"};
  for (std::string_view k : kElementwise)
    if (kind == k) return true;
  return false;
}

const char* split_name(TensorSplit split) {
  switch (split) {
    case TensorSplit::kWhole:
      return "whole";
    case TensorSplit::kColumn:
      return "column";
    case TensorSplit::kColumnGathered:
      return "column+gather";
    case TensorSplit::kRow:
      return "row";
    case TensorSplit::kChannel:
      return "channel";
  }
  return "?";
}

std::vector<TensorSplit> plan_tensor_split(const std::vector<SplitCandidate>& layers, int parts) {
  std::vector<TensorSplit> out(layers.size(), TensorSplit::kWhole);
  if (parts <= 1) return out;
  const auto divides = [parts](std::int64_t features) { return features > 0 && features % parts == 0; };
  for (std::size_t i = 0; i < layers.size(); ++i) {
    const SplitCandidate& l = layers[i];
    if (out[i] != TensorSplit::kWhole) continue;  // already the row half of a pair
    if (l.kind == "conv2d") {
      if (divides(l.out_features)) out[i] = TensorSplit::kChannel;
      continue;
    }
    if (l.kind != "linear" || !divides(l.out_features)) continue;
    std::size_t next = i + 1;
    while (next < layers.size() && elementwise_kind(layers[next].kind)) ++next;
    if (next < layers.size() && layers[next].kind == "linear" && layers[next].in_features == l.out_features) {
      out[i] = TensorSplit::kColumn;
      out[next] = TensorSplit::kRow;
    } else {
      out[i] = TensorSplit::kColumnGathered;
    }
  }
  return out;
}

}  // namespace dtrain::tensorparallel
