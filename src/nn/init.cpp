#include "nn/init.h"

#include <cmath>

#include "nn/module.h"

namespace dtrain::init {

Tensor uniform_fan_in(const Shape& shape, std::int64_t fan_in, Rng& rng) {
  const double bound = fan_in > 0 ? 1.0 / std::sqrt(static_cast<double>(fan_in)) : 0.0;
  std::vector<float> v(static_cast<std::size_t>(shape.numel()));
  for (float& x : v) x = static_cast<float>(rng.uniform(-bound, bound));
  return Tensor::from_vector(v, shape);
}

Tensor kaiming_normal_fan_out(const Shape& shape, std::int64_t fan_out, Rng& rng) {
  const double stddev = std::sqrt(2.0 / static_cast<double>(fan_out));
  std::vector<float> v(static_cast<std::size_t>(shape.numel()));
  for (float& x : v) x = static_cast<float>(rng.normal(0, stddev));
  return Tensor::from_vector(v, shape);
}

std::int64_t zero_residual_gammas(const Module& model) {
  std::int64_t zeroed = 0;
  for (const auto& [path, m] : model.named_modules()) {
    const Module* norm = m->residual_branch_norm();
    if (norm == nullptr) continue;
    for (const auto& [name, p] : norm->own_parameters()) {
      if (name != "weight") continue;
      Variable scale = p;  // a handle: the model's own storage
      scale.data().fill(0.0);
      ++zeroed;
    }
  }
  return zeroed;
}

}  // namespace dtrain::init
