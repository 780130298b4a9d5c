// The decisions of a simulated schedule in words, with the model's terms behind each rank count:
//   t=120 s: job B gets 2 ranks (was 0), not 3: the third would save 4% (remaining 310 s -> 298 s):
//   compute falls from 280 s to 187 s (9375 -> 6250 steps of 30 ms) while communication and waits
//   grow from 30 s to 111 s (per step 3.2 ms -> 17.8 ms; ring, 4 MiB buckets); <the policy's rule>
// For a job's remaining work r at w ranks, remaining time = r x (steps(w) x (compute + other)(w) +
// evaluation), split into r x steps x compute (the workers' own work, which more ranks divide)
// and r x steps x other (exposed communication, the wait for the slowest worker, data loading,
// which more ranks make longer per step).
#pragma once

#include <string>
#include <vector>

#include "schedule/job.h"
#include "schedule/job_pricing.h"
#include "schedule/simulator.h"

namespace dtrain::schedule {

// Why one more rank than `ranks` saves what it does for a job with `remaining` of its work left:
// "the third would save 4% (remaining 310 s -> 298 s): compute falls ... while ... grow ...".
std::string marginal_terms(const JobPrice& price, double remaining, int ranks);

// One line per action.
std::string explain_action(const Action& a, const Job& job, const JobPrice& price);
std::string explain_schedule(const ScheduleResult& r, const std::vector<Job>& jobs, const PriceTable& prices);

}  // namespace dtrain::schedule
