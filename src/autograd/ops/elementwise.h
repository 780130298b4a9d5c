// Elementwise ops with their gradients.
#pragma once

#include <cstdint>

#include "autograd/variable.h"

namespace dtrain::ops {

Variable add(const Variable& a, const Variable& b);  // residual connections
Variable mul(const Variable& a, const Variable& b);
Variable scale(const Variable& x, double alpha);
Variable relu(const Variable& x);
// Inverted dropout: keeps each element with probability 1-p and scales it by 1/(1-p), so
// evaluation needs no rescaling. The mask depends only on (seed, element index).
Variable dropout(const Variable& x, double p, std::uint64_t seed);

}  // namespace dtrain::ops
