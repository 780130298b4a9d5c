#include "optim/lr_scaling.h"

#include <fmt/format.h>

#include <cmath>

#include "core/error.h"

namespace dtrain {

std::string_view lr_scaling_name(LrScaling rule) {
  switch (rule) {
    case LrScaling::kNone:
      return "none";
    case LrScaling::kLinear:
      return "linear";
    case LrScaling::kSqrt:
      return "sqrt";
  }
  return "?";
}

LrScaling parse_lr_scaling(std::string_view name) {
  for (LrScaling r : {LrScaling::kNone, LrScaling::kLinear, LrScaling::kSqrt}) {
    if (name == lr_scaling_name(r)) return r;
  }
  throw InputError(fmt::format("unknown --lr-scaling '{}'; valid: none, linear, sqrt", name));
}

double scaled_lr(LrScaling rule, double base_lr, std::int64_t global_batch, std::int64_t base_batch) {
  if (global_batch < 1) throw InputError(fmt::format("the global batch must be >= 1, got {}", global_batch));
  if (base_batch < 1) {
    throw InputError(fmt::format("--base-batch must be >= 1 (the batch --lr was tuned for), got {}", base_batch));
  }
  if (!(base_lr >= 0)) throw InputError(fmt::format("--lr must be >= 0, got {}", base_lr));
  const double k = static_cast<double>(global_batch) / static_cast<double>(base_batch);
  switch (rule) {
    case LrScaling::kNone:
      return base_lr;
    case LrScaling::kLinear:
      return base_lr * k;
    case LrScaling::kSqrt:
      return base_lr * std::sqrt(k);
  }
  return base_lr;
}

}  // namespace dtrain
