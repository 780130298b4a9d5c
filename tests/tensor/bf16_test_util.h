// Shared helpers for the bf16 kernel tests: seeded uniform f32 tensors, the gap between a bf16
// kernel's result and its reference, and the OpenMP threads set for a scope.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

#include "core/threads.h"
#include "tensor/tensor.h"

namespace dtrain::testing {

// Values uniform in [-1, 1).
inline Tensor uniform_f32(const Shape& shape, std::mt19937& rng) {
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  std::vector<float> v(static_cast<std::size_t>(shape.numel()));
  for (float& x : v) x = dist(rng);
  return Tensor::from_vector(v, shape);
}

// The largest |got - want| over the largest |want|.
inline double relative_gap(const Tensor& got, const Tensor& want) {
  const std::vector<double> a = got.to_vector_f64(), b = want.to_vector_f64();
  EXPECT_EQ(a.size(), b.size());
  double gap = 0, scale = 1e-30;
  for (std::size_t i = 0; i < a.size() && i < b.size(); ++i) {
    gap = std::max(gap, std::abs(a[i] - b[i]));
    scale = std::max(scale, std::abs(b[i]));
  }
  return gap / scale;
}

// Sets the OpenMP threads for one scope.
struct OmpThreadsScope {
  int before = num_threads();
  explicit OmpThreadsScope(int n) { set_num_threads(n); }
  ~OmpThreadsScope() { set_num_threads(before); }
  OmpThreadsScope(const OmpThreadsScope&) = delete;
  OmpThreadsScope& operator=(const OmpThreadsScope&) = delete;
};

}  // namespace dtrain::testing
