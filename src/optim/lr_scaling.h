// The learning rate of a large global batch from the rate tuned at a base batch:
//   linear  lr = base_lr * k          (Goyal et al. 2017, section 2.1: "when the minibatch size is
//                                      multiplied by k, multiply the learning rate by k")
//   sqrt    lr = base_lr * sqrt(k)    (Krizhevsky 2014; Goyal et al. Table 2a: 26.22% top-1 error at
//                                      8k against 23.74% for the linear rule)
//   none    lr = base_lr
// with k = global_batch / base_batch, the global batch being every worker's samples of one step.
// Gradual warmup then starts at lr / k (Goyal et al. section 2.2), the base batch's own rate.
#pragma once

#include <cstdint>
#include <string_view>

namespace dtrain {

enum class LrScaling { kNone, kLinear, kSqrt };

std::string_view lr_scaling_name(LrScaling rule);
// "none", "linear" or "sqrt"; InputError listing them otherwise.
LrScaling parse_lr_scaling(std::string_view name);
// The scaled rate; InputError for a batch or base batch below 1 or a negative rate.
double scaled_lr(LrScaling rule, double base_lr, std::int64_t global_batch, std::int64_t base_batch);

}  // namespace dtrain
