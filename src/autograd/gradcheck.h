// Finite-difference gradient check. The loss L = sum(f(inputs) * R) with a fixed random R of the
// output's shape; analytic dL/dx from backward() is compared with the central difference
// (L(x + eps) - L(x - eps)) / (2 eps) for every element of every input that requires a gradient.
// Run it on f64 inputs: they go to the reference kernels, and eps = 1e-6 then leaves a truncation
// and rounding error near 1e-9 instead of the 1e-2 that f32 would.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "autograd/variable.h"

namespace dtrain {

struct GradcheckResult {
  bool ok = true;
  double max_abs_error = 0;
  std::string worst;  // "input 1 element 17: analytic 0.25 numeric 0.2499"
};

GradcheckResult gradcheck(const std::function<Variable(const std::vector<Variable>&)>& f,
                          const std::vector<Variable>& inputs, double eps = 1e-6, double atol = 1e-6,
                          double rtol = 1e-5);

}  // namespace dtrain
