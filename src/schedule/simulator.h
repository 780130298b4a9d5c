// An event-driven simulation of a queue of jobs on a cluster under a policy (policy.h), with the
// price table's seconds as the truth: a job at w ranks does 1 / seconds(w) of its work per second
// of progress. The policy decides at arrivals, completions, every time-slice boundary (k x slice)
// and when it asks (Policy::next_decision); nothing changes between decisions, so a policy cannot
// thrash faster than the events.
//
// Preemption: when a running job's ranks change or it is stopped, it pays its preemption cost
// (job_pricing.h) as seconds without progress on the ranks it next runs on: at once for a
// resize, at its restart for a stop. This charges the checkpoint write and the requeue wait on
// the new ranks (in Slurm the requeue wait holds none, so this is an upper bound on the ranks it
// costs). A job's first start pays nothing. Where a stop suspends the job (PreemptionCost::
// suspends), its restart on the ranks it held pays only the suspend latency, and on other ranks
// the whole cost (it is resumed, checkpointed and requeued at the new count).
//
// Ranks are a count: placement on nodes is not simulated (the prices assume a job's ranks fill
// the fewest nodes). Deterministic: ties in time are broken by the trace's order.
#pragma once

#include <string>
#include <vector>

#include "schedule/job.h"
#include "schedule/job_pricing.h"
#include "schedule/policy.h"

namespace dtrain::schedule {

// A stretch of time a job held a fixed number of ranks.
struct Segment {
  double start = 0, end = 0;
  int ranks = 0;
  double overhead = 0;  // seconds of it spent paying a preemption (no progress)
  bool probe = false;   // an optimus probe run
};

// One decision that changed a job's ranks: what a backend carries out (start, resize or stop
// the job at `time`), with the policy's reason and the state it decided on.
struct Action {
  double time = 0;
  std::size_t job = 0;  // index into the trace
  int ranks = 0;        // 0: stop
  int previous = 0;     // ranks held before
  bool probe = false;
  double remaining = 1;  // fraction of the work left at the decision
  std::string reason;
};

struct JobOutcome {
  double submit = 0, start = -1, end = -1;
  double jct() const { return end - submit; }  // job completion time
  std::vector<Segment> segments;
  int preemptions = 0;               // changes of a running job's ranks, stops included
  double rank_seconds = 0;           // ranks x time held
  double overhead_rank_seconds = 0;  // of which paying preemptions
  double probe_rank_seconds = 0;     // of which in probe runs
};

struct ScheduleResult {
  std::string policy;
  int capacity = 0;
  std::vector<JobOutcome> jobs;  // in the trace's order
  std::vector<Action> actions;   // in time order
  double mean_jct = 0;
  double makespan = 0;     // the last end minus the first submit
  double utilisation = 0;  // rank-seconds held / (capacity x makespan)
  int preemptions = 0;
  double probe_rank_seconds = 0;
  double overhead_rank_seconds = 0;
};

struct SimulationOptions {
  double slice = 600;  // seconds between the periodic decisions; 0: none
  // A job keeps the rank count it first ran with, as on a real cluster (fixed_ranks.h).
  bool fixed_ranks = false;
};

// Fills the averages of `r` (mean JCT, makespan, utilisation, preemptions, probe and overhead
// rank-seconds) from its jobs' outcomes: the simulator's and the Slurm backend's.
void summarise(ScheduleResult& r);

// Throws InternalError when the policy over-allocates or leaves the cluster idle with jobs
// waiting and nothing left to happen.
ScheduleResult simulate(const std::vector<Job>& jobs, const PriceTable& prices, int capacity, Policy& policy,
                        const SimulationOptions& options = {});

}  // namespace dtrain::schedule
