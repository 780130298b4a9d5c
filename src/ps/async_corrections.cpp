#include "ps/async_corrections.h"

#include <fmt/format.h>

#include <algorithm>

#include "core/error.h"

namespace dtrain::ps {

std::string_view async_lr_name(AsyncLr rule) {
  switch (rule) {
    case AsyncLr::kDivided:
      return "divided";
    case AsyncLr::kStaleness:
      return "staleness";
    case AsyncLr::kFull:
      return "full";
  }
  return "?";
}

std::string_view async_momentum_name(AsyncMomentum rule) {
  return rule == AsyncMomentum::kKeep ? "keep" : "compensate";
}

AsyncLr parse_async_lr(std::string_view name) {
  for (AsyncLr r : {AsyncLr::kDivided, AsyncLr::kStaleness, AsyncLr::kFull}) {
    if (name == async_lr_name(r)) return r;
  }
  throw InputError(fmt::format("unknown --async-lr '{}'; valid: divided, staleness, full", name));
}

AsyncMomentum parse_async_momentum(std::string_view name) {
  for (AsyncMomentum r : {AsyncMomentum::kKeep, AsyncMomentum::kCompensate}) {
    if (name == async_momentum_name(r)) return r;
  }
  throw InputError(fmt::format("unknown --async-momentum '{}'; valid: keep, compensate", name));
}

double per_push_lr(AsyncLr rule, double lr, int workers, std::int64_t tau) {
  switch (rule) {
    case AsyncLr::kDivided:
      return lr / workers;
    case AsyncLr::kStaleness:
      return lr / static_cast<double>(std::max<std::int64_t>(1, tau));
    case AsyncLr::kFull:
      return lr;
  }
  return lr;
}

double server_momentum(AsyncMomentum rule, double momentum, int workers) {
  if (rule == AsyncMomentum::kKeep) return momentum;
  return std::max(0.0, momentum - (1.0 - 1.0 / workers));
}

OptimizerConfig server_optimizer(const OptimizerConfig& optimizer, AsyncMomentum rule, std::string_view sync,
                                 int workers) {
  if (rule == AsyncMomentum::kKeep || sync == "bsp") return optimizer;
  if (optimizer.name != "sgd") {
    throw InputError(
        fmt::format("--async-momentum compensate lowers sgd's momentum; --optimizer {} has none to "
                    "lower: leave the flag out or use --optimizer sgd",
                    optimizer.name));
  }
  OptimizerConfig c = optimizer;
  c.momentum = server_momentum(rule, optimizer.momentum, workers);
  return c;
}

}  // namespace dtrain::ps
