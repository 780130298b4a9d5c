// The update of ranks that share one copy of the weights (parallel/shared_weights.h: the shm
// allreduce without double buffering), timed as a data-parallel step runs it: after a forward and
// backward of the model (untimed, so every rank has just read all the weights) and a barrier (every
// bucket summed), each rank's part of the momentum SGD step and the barrier that ends it, timed
// as one. Its part is 1/p of the parameters, but not 1/p of the private update's time: every cache
// line the part writes was read by the other ranks' forward and is first taken back from their
// cores, and the barrier waits for the slowest part. On 2 ranks of the 2-core VM, mlp's half
// took 220-240 us and its barrier 60-150, where the whole private update took 175 us (2026-12-05).
// The performance model prices the update of a shared-weights run at this rate (step_model.cpp).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "parallel/comm_worker.h"

namespace dtrain::perf {

// Parameters per second of the shared update over `models` (each at its natural input and
// `batch`), the parameters of all models over their median update times; every rank of `worker`
// calls it (collective), on ranks that share one host. `calls` timed updates per model, after two
// untimed ones.
double shared_update_rate(CommWorker& worker, const std::vector<std::string>& models, std::int64_t batch, int calls);

}  // namespace dtrain::perf
