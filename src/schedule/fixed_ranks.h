// Jobs that keep the rank count they first ran with. A data-parallel checkpoint resumes exactly
// only at the world size that wrote it (steps per epoch depend on it), so on a real cluster a
// job that has run can be stopped and resumed but not resized. The Slurm backend
// (slurm_backend.h) applies this to every decision, and the simulator does too with
// SimulationOptions::fixed_ranks, so that a simulation predicts what the cluster will do.
#pragma once

#include <vector>

#include "schedule/policy.h"

namespace dtrain::schedule {

// Rewrites `assignments` (indexed like in.jobs): a job with first_ranks[id] > 0 given any other
// positive count gets first_ranks[id]; if that overfills the cluster, such jobs, last first,
// wait (0) instead until the rest fits.
void keep_first_ranks(const PolicyInput& in, const std::vector<int>& first_ranks, std::vector<Assignment>& assignments);

}  // namespace dtrain::schedule
