#include "ps/protocol.h"

#include <fmt/format.h>

#include "core/error.h"
#include "ps/clock_gate.h"

namespace dtrain::ps {

std::string_view sync_mode_name(SyncMode mode) {
  switch (mode) {
    case SyncMode::kBsp:
      return "bsp";
    case SyncMode::kSsp:
      return "ssp";
    case SyncMode::kAsp:
      return "asp";
  }
  return "?";
}

SyncMode parse_sync_mode(std::string_view name) {
  for (SyncMode m : {SyncMode::kBsp, SyncMode::kSsp, SyncMode::kAsp}) {
    if (name == sync_mode_name(m)) return m;
  }
  throw InputError(fmt::format("unknown synchronisation '{}'; valid: bsp, ssp, asp", name));
}

std::int64_t PsConfig::gate_staleness() const {
  switch (sync) {
    case SyncMode::kBsp:
      return 0;
    case SyncMode::kSsp:
      return staleness;
    case SyncMode::kAsp:
      return ClockGate::kUnbounded;
  }
  return 0;
}

void PsConfig::validate(int world_size) const {
  if (servers < 1 || workers < 1) {
    throw InputError(
        fmt::format("parameter-server training needs at least one server and one worker, got {} "
                    "server(s) and {} worker(s)",
                    servers, workers));
  }
  if (world_size != workers + servers) {
    throw InputError(fmt::format("{} server(s) and {} worker(s) need {} ranks, but there are {}", servers, workers,
                                 workers + servers, world_size));
  }
  if (sync == SyncMode::kSsp && staleness < 0) {
    throw InputError(fmt::format("--staleness must be >= 0, got {}", staleness));
  }
  if (sync == SyncMode::kBsp && (async_lr != AsyncLr::kDivided || async_momentum != AsyncMomentum::kKeep)) {
    throw InputError(
        "--async-lr and --async-momentum correct --sync ssp and asp, whose every push is a step; bsp applies one "
        "step per clock: leave them out or choose ssp or asp");
  }
  if (!(timeout_seconds >= 0)) throw InputError(fmt::format("a timeout must be >= 0 s, got {}", timeout_seconds));
  if (wire != DType::kF32 && wire != DType::kF16 && wire != DType::kBF16) {
    throw InputError(fmt::format("parameter-server pushes travel in f32, f16 or bf16, not {}", dtype_name(wire)));
  }
}

}  // namespace dtrain::ps
