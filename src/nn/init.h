// Parameter initialisation with PyTorch's defaults for each layer kind, from an explicit Rng.
#pragma once

#include <cstdint>

#include "core/random.h"
#include "tensor/tensor.h"

namespace dtrain {
class Module;
}

namespace dtrain::init {

// U(-bound, bound) with bound = 1/sqrt(fan_in): PyTorch's kaiming_uniform(a = sqrt(5)) for
// weights and its bias rule for Linear and Conv2d.
Tensor uniform_fan_in(const Shape& shape, std::int64_t fan_in, Rng& rng);
// N(0, sqrt(2 / fan_out)): He et al. 2015 for ReLU networks (torchvision's ResNet conv init).
Tensor kaiming_normal_fan_out(const Shape& shape, std::int64_t fan_out, Rng& rng);

// Goyal et al. 2017 (section 5.1): every residual block's last batch norm on its branch starts with
// scale 0, so each block starts as the identity. Returns how many scales were zeroed.
std::int64_t zero_residual_gammas(const Module& model);

}  // namespace dtrain::init
