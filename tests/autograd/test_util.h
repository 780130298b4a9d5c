// Shared helpers for autograd tests: seeded random f64 variables.
#pragma once

#include <random>

#include "autograd/variable.h"

namespace dtrain::testing {

// Uniform values in [lo, hi); `min_gap` > 0 pushes values away from zero (ReLU kinks) and keeps
// them distinct (max-pooling ties), so finite differences see a smooth function.
inline Variable random_var(const Shape& shape, std::uint64_t seed, double lo = -1, double hi = 1,
                           bool requires_grad = true, DType dtype = DType::kF64) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> uni(lo, hi);
  std::vector<double> v(static_cast<std::size_t>(shape.numel()));
  for (double& x : v) {
    x = uni(rng);
    if (std::abs(x) < 0.05) x += x < 0 ? -0.05 : 0.05;
  }
  return Variable(Tensor::from_vector(v, shape, dtype), requires_grad);
}

}  // namespace dtrain::testing
