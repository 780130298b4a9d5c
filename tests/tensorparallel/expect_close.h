// The tensor-parallel tests' comparison: every element of `got` within 1e-5 of the largest
// magnitude of `want` (f32 sums in another order).
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>

#include "tensor/tensor.h"

namespace dtrain::tensorparallel {

inline void expect_close(const Tensor& got, const Tensor& want, const std::string& what) {
  const auto g = got.to_plain().to_vector(), w = want.to_plain().to_vector();
  ASSERT_EQ(g.size(), w.size()) << what;
  double worst = 0, scale = 0;
  for (std::size_t i = 0; i < g.size(); ++i) {
    worst = std::max(worst, std::abs(double(g[i]) - w[i]));
    scale = std::max(scale, std::abs(double(w[i])));
  }
  EXPECT_LE(worst, 1e-5 * scale) << what;
}

}  // namespace dtrain::tensorparallel
