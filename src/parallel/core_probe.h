// The cache-line round trip between two cores (core/core_round_trip.h) taken at a quiet moment of
// a multi-rank job: rank 0 measures while every other rank waits in a barrier, whose polling
// yields the cores, so the probe's two threads find the cores of rank 0's host free.
#pragma once

#include <optional>

#include "parallel/comm_worker.h"

namespace dtrain {

// A collective over the worker's ranks (null: this process alone). Rank 0's measurement in
// seconds; nullopt on the other ranks and where there is no pair of cores to measure.
std::optional<double> core_round_trip_on_rank0(CommWorker* worker);

}  // namespace dtrain
