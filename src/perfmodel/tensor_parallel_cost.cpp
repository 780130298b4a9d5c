#include "perfmodel/tensor_parallel_cost.h"

#include <fmt/format.h>

#include <map>
#include <string>

#include "core/error.h"
#include "perfmodel/allreduce_time.h"

namespace dtrain::perf {

using tensorparallel::TensorSplit;

namespace {

// The chain's child a layer belongs to: the one of `names` its path is or lies under (the chain's
// own names, which may hold dots: "layers.3"), else its path's first component.
std::string child_of(const std::string& path, const std::vector<std::string>& names) {
  for (const std::string& n : names)
    if (path == n || path.starts_with(n + ".")) return n;
  return path.substr(0, path.find('.'));
}

// The chain's layers as plan_tensor_split sees them: one candidate per child of the chain, in
// order; a child with nested layers (a residual block) is a composite candidate nothing splits.
std::vector<tensorparallel::SplitCandidate> candidates(const std::vector<LayerSummary>& layers,
                                                       const std::vector<std::string>& names,
                                                       std::vector<int>& candidate_of) {
  std::vector<tensorparallel::SplitCandidate> out;
  std::map<std::string, int> index;
  for (const LayerSummary& l : layers) {
    const std::string name = child_of(l.path, names);
    auto [it, fresh] = index.try_emplace(name, static_cast<int>(out.size()));
    if (fresh) {
      tensorparallel::SplitCandidate c{l.kind};
      if (l.kind == "linear") {
        c.in_features = l.input.numel();
        c.out_features = l.output.numel();
      } else if (l.kind == "conv2d") {
        c.in_features = l.in_channels;
        c.out_features = l.out_channels;
      }
      out.push_back(c);
    }
    if (!fresh || l.path != name) out[static_cast<std::size_t>(it->second)].kind = "composite";
    candidate_of.push_back(it->second);
  }
  return out;
}

// Shape with its first dimension (features, channels) divided by `parts`.
Shape divided(const Shape& s, int parts) {
  std::vector<std::int64_t> dims = s.dims();
  dims.at(0) /= parts;
  return Shape(std::move(dims));
}

double allreduce_seconds(int parts, double floats, const Profile& profile) {
  return allreduce_time(AllreducePlan{comm::Algorithm::kRing, parts}, static_cast<std::size_t>(floats), profile)
      .seconds;
}

}  // namespace

double allgather_seconds(int parts, double bytes_per_rank, const Profile& profile) {
  const LinkProfile& link = profile.node.intra_link;
  return (parts - 1) * (link.latency.value + bytes_per_rank / link.bandwidth.value);
}

std::vector<std::pair<TensorSplit, LayerSummary>> split_parts(const std::vector<LayerSummary>& layers, int parts,
                                                              const std::vector<std::string>& names) {
  std::vector<int> candidate_of;
  const auto plan = tensorparallel::plan_tensor_split(candidates(layers, names, candidate_of), parts);
  std::vector<std::pair<TensorSplit, LayerSummary>> out;
  bool between_pair = false;  // after a column layer, before its row layer: activations on O / T features
  for (std::size_t i = 0; i < layers.size(); ++i) {
    const TensorSplit split = plan[static_cast<std::size_t>(candidate_of[i])];
    LayerSummary p = layers[i];
    if (split == TensorSplit::kWhole && between_pair) {
      p.forward_flops /= parts;
      p.backward_flops /= parts;
      p.input = divided(p.input, parts);
      p.output = divided(p.output, parts);
    }
    if (split == TensorSplit::kColumn) between_pair = true;
    if (split == TensorSplit::kRow) between_pair = false;
    if (split != TensorSplit::kWhole) {
      p.forward_flops /= parts;
      p.backward_flops /= parts;
      p.params /= parts;
      p.param_bytes /= parts;
    }
    if (split == TensorSplit::kRow) {
      p.input = divided(p.input, parts);
      if (p.in_channels > 0) p.in_channels /= parts;
    } else if (split != TensorSplit::kWhole) {
      p.output = divided(p.output, parts);
      if (p.out_channels > 0) p.out_channels /= parts;
    }
    out.emplace_back(split, std::move(p));
  }
  return out;
}

std::vector<TensorParallelLayer> split_layers(const std::vector<LayerSummary>& layers, int parts,
                                              std::int64_t micro_batch, const Profile& profile,
                                              bool input_needs_gradient, const std::vector<std::string>& names) {
  if (parts > profile.node.accelerators)
    throw InputError(fmt::format(
        "--tensor-parallel {}: the split layers' collectives run inside one node, and the profile's node has {} "
        "device(s); use at most {} (or a profile with more per node, e.g. 8xa100-nvlink3)",
        parts, profile.node.accelerators, profile.node.accelerators));
  const double n = static_cast<double>(micro_batch);
  std::vector<TensorParallelLayer> out;
  bool gradient_flows = input_needs_gradient;  // whether this layer's input needs dL/dx
  const auto split = split_parts(layers, parts, names);
  const double copy = profile.device.gradient_copy_seconds();  // per f32 element, read and written
  for (std::size_t i = 0; i < layers.size(); ++i) {
    TensorParallelLayer t{split[i].first, split[i].second};
    const double in = static_cast<double>(layers[i].input.numel());
    const double out_features = static_cast<double>(layers[i].output.numel());
    switch (t.split) {
      case TensorSplit::kWhole:
        break;
      case TensorSplit::kColumn:
      case TensorSplit::kColumnGathered:
      case TensorSplit::kChannel:
        if (gradient_flows) {
          t.backward_comm_bytes = 4 * n * in;
          t.backward_comm_s = allreduce_seconds(parts, n * in, profile) + n * in * copy;
        }
        if (t.split != TensorSplit::kColumn) {
          const double part = n * out_features / parts, whole = n * out_features;
          const bool blocked = t.split == TensorSplit::kChannel;  // a convolution's output layout
          t.forward_comm_bytes = 4 * part;
          t.forward_comm_s = allgather_seconds(parts, t.forward_comm_bytes, profile) +
                             ((blocked ? 2 : 1) * part + (blocked ? 2 : 1) * whole) * copy;
          t.backward_comm_s += part * copy;
        }
        break;
      case TensorSplit::kRow:
        t.forward_comm_bytes = 4 * n * out_features;
        t.forward_comm_s = allreduce_seconds(parts, n * out_features, profile) + 2 * n * out_features * copy;
        t.backward_comm_s = 0.5 * n * out_features * copy;
        break;
    }
    out.push_back(std::move(t));
    gradient_flows = gradient_flows || layers[i].params > 0;
  }
  return out;
}

}  // namespace dtrain::perf
