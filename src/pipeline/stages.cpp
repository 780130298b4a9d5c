#include "pipeline/stages.h"

#include <fmt/format.h>

#include <algorithm>
#include <limits>

#include "core/error.h"
#include "nn/summary.h"

namespace dtrain::pipeline {

namespace {

std::string layer_names(const Sequential& model) {
  std::string out;
  for (std::size_t i = 0; i < model.size(); ++i) out += (i ? ", " : "") + model.layer_name(i);
  return out;
}

void check_stage_count(std::size_t layers, std::size_t stages) {
  if (stages < 1) throw InputError(fmt::format("--pipeline must be at least 1 stage, got {}", stages));
  if (stages > layers)
    throw InputError(fmt::format("--pipeline {}: the model has only {} layers to split, so use at most {} stages",
                                 stages, layers, layers));
}

}  // namespace

StageBounds split_at(const Sequential& model, const std::vector<std::string>& stage_starts) {
  check_stage_count(model.size(), stage_starts.size() + 1);
  StageBounds bounds{0};
  for (const std::string& name : stage_starts) {
    std::size_t i = 0;
    while (i < model.size() && model.layer_name(i) != name) ++i;
    if (i == model.size())
      throw InputError(
          fmt::format("--split {}: the model has no layer of that name; its layers are {}", name, layer_names(model)));
    if (i <= bounds.back())
      throw InputError(
          fmt::format("--split {}: stages must start at distinct layers after the first, in model order ({})", name,
                      layer_names(model)));
    bounds.push_back(i);
  }
  bounds.push_back(model.size());
  return bounds;
}

StageBounds split_balanced(const std::vector<double>& costs, int stages) {
  const std::size_t n = costs.size();
  check_stage_count(n, static_cast<std::size_t>(std::max(stages, 0)));
  const auto k_count = static_cast<std::size_t>(stages);
  std::vector<double> prefix(n + 1, 0);
  for (std::size_t i = 0; i < n; ++i) prefix[i + 1] = prefix[i] + costs[i];
  constexpr double kInf = std::numeric_limits<double>::infinity();
  // best[k][j]: the least slowest-stage cost of the first j layers in k stages; from[k][j] where
  // the last of those stages starts.
  std::vector<std::vector<double>> best(k_count + 1, std::vector<double>(n + 1, kInf));
  std::vector<std::vector<std::size_t>> from(k_count + 1, std::vector<std::size_t>(n + 1, 0));
  best[0][0] = 0;
  for (std::size_t k = 1; k <= k_count; ++k)
    for (std::size_t j = k; j <= n; ++j)
      for (std::size_t i = k - 1; i < j; ++i) {
        const double c = std::max(best[k - 1][i], prefix[j] - prefix[i]);
        if (c < best[k][j]) {
          best[k][j] = c;
          from[k][j] = i;
        }
      }
  StageBounds bounds(k_count + 1, 0);
  bounds[k_count] = n;
  for (std::size_t k = k_count; k > 0; --k) bounds[k - 1] = from[k][bounds[k]];
  return bounds;
}

std::vector<double> layer_flops(Sequential& model, const Shape& sample_shape) {
  std::vector<double> out(model.size(), 0.0);
  for (const LayerSummary& l : summarize(model, sample_shape))
    for (std::size_t i = 0; i < model.size(); ++i) {
      const std::string& name = model.layer_name(i);
      if (l.path == name || l.path.starts_with(name + ".")) out[i] += l.forward_flops + l.backward_flops;
    }
  return out;
}

std::shared_ptr<Sequential> make_stage(const Sequential& model, std::size_t begin, std::size_t end) {
  DT_CHECK(begin < end && end <= model.size(), "stage [{}, {}) of {} layers", begin, end, model.size());
  auto stage = std::make_shared<Sequential>();
  for (std::size_t i = begin; i < end; ++i) stage->add(model.layer_name(i), model.layer(i));
  stage->train(model.training());
  return stage;
}

std::vector<Shape> boundary_shapes(Sequential& model, const StageBounds& bounds, const Shape& sample_shape) {
  const bool was_training = model.training();
  model.eval();
  const NoGradGuard no_grad;
  std::vector<std::int64_t> dims{1};
  dims.insert(dims.end(), sample_shape.dims().begin(), sample_shape.dims().end());
  Variable x(Tensor::zeros(Shape(dims)));
  std::vector<Shape> out{sample_shape};
  for (std::size_t k = 0; k + 1 < bounds.size(); ++k) {
    for (std::size_t i = bounds[k]; i < bounds[k + 1]; ++i) x = (*model.layer(i))(x);
    out.push_back(x.shape().per_sample());
  }
  model.train(was_training);
  return out;
}

std::string describe(const Sequential& model, const StageBounds& bounds) {
  std::string out;
  for (std::size_t k = 0; k + 1 < bounds.size(); ++k) {
    if (k) out += " | ";
    out += model.layer_name(bounds[k]);
    if (bounds[k + 1] - bounds[k] > 1) out += ".." + model.layer_name(bounds[k + 1] - 1);
  }
  return out;
}

}  // namespace dtrain::pipeline
