// Hand-made queues for the scheduling tests: jobs with a submit time and a rank range, priced by
// a table of seconds per rank count (schedule/job_pricing.h: hand_price).
#pragma once

#include <cstdlib>
#include <string>
#include <vector>

#include "schedule/job.h"
#include "schedule/job_pricing.h"
#include "schedule/simulator.h"

namespace dtrain::schedule::test {

struct HandJob {
  std::string name;
  double submit = 0;
  int min_ranks = 1;
  std::vector<double> seconds;  // whole work at min_ranks, min_ranks + 1, ...
  double preemption = 0;
};

struct HandQueue {
  std::vector<Job> jobs;
  PriceTable prices;
};

inline HandQueue hand_queue(const std::vector<HandJob>& spec) {
  HandQueue q;
  for (const HandJob& h : spec) {
    Job j;
    j.name = h.name;
    j.model = "mlp";
    j.submit_time = h.submit;
    j.min_ranks = h.min_ranks;
    j.max_ranks = h.min_ranks + static_cast<int>(h.seconds.size()) - 1;
    q.jobs.push_back(j);
    q.prices.jobs.push_back(hand_price(h.min_ranks, h.seconds, h.preemption));
  }
  return q;
}

// The job named `name` in a result.
inline const JobOutcome& outcome(const HandQueue& q, const ScheduleResult& r, const std::string& name) {
  for (std::size_t i = 0; i < q.jobs.size(); ++i) {
    if (q.jobs[i].name == name) return r.jobs[i];
  }
  std::abort();
}

// The built-in profiles of the source tree for tests that price with the model.
inline void use_source_profiles() { setenv("DTRAIN_PROFILES", DTRAIN_PROFILES_DIR, 0); }

}  // namespace dtrain::schedule::test
