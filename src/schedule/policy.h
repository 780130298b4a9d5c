// A scheduling policy: at each decision it sees the time, the jobs submitted and not finished
// (their requested ranks, attained service, remaining work and current ranks) and the prices
// (job_pricing.h), and returns every job's ranks (0: not running) within the cluster's capacity.
// The simulator (simulator.h) asks at arrivals, completions, time-slice boundaries and when the
// policy itself asks (next_decision); a backend that drives real jobs can ask the same object
// with the jobs' measured state. A running job whose ranks change or that is stopped pays its
// preemption cost: the simulator charges it, the policies weigh it.
//
// The policies (one file each, with its rule and source):
//   fifo      submit order at requested ranks, strict head of line, never preempts;
//   srtf      shortest predicted remaining time first at requested ranks, preemptive;
//   tiresias  discretized two-dimensional least attained service (Gu et al., NSDI 2019);
//   optimus   probe runs, a fitted speed curve, greedy marginal gain (Peng et al., EuroSys 2018);
//   model     the model's prices, no probes: smallest remaining service (ranks x time) first,
//             each job up to the rank count where its speedup bends (its knee), the rest by
//             marginal gain.
#pragma once

#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "schedule/job.h"
#include "schedule/job_pricing.h"

namespace dtrain::schedule {

struct JobView {
  std::size_t id = 0;  // index into the trace and the price table
  std::string name;
  double submit_time = 0;
  int min_ranks = 1, max_ranks = 1;  // max_ranks: the ranks the job requests
  double attained = 0;               // rank-seconds held so far (restarts and probes included)
  double remaining = 1;              // fraction of the work left, in (0, 1]
  int ranks = 0;                     // held now; 0: waiting
  bool probe = false;                // the ranks held are a probe run (optimus)
  double overhead_left = 0;          // seconds of restart still to pay before progress resumes
  double progress_seconds = 0;       // seconds of progress at the current ranks since they were given

  // The view of trace job `id` with its fixed fields (name, submit time, rank range) filled in;
  // the simulator and the Slurm backend add the state they track.
  static JobView of(std::size_t id, const Job& job);
};

struct PolicyInput {
  double now = 0;
  int capacity = 0;
  std::vector<JobView> jobs;  // submitted and not finished, in submit order
  const PriceTable* prices = nullptr;
  const JobPrice& price(const JobView& j) const { return prices->jobs[j.id]; }
};

struct Assignment {
  int ranks = 0;  // 0, or within the job's [min_ranks, max_ranks]
  bool probe = false;
  std::string reason;  // the policy's rule, for the explanation (explain.h)
};

class Policy {
 public:
  virtual ~Policy() = default;
  virtual std::string name() const = 0;
  // One assignment per entry of in.jobs, in its order; the ranks add up to at most in.capacity.
  virtual std::vector<Assignment> allocate(const PolicyInput& in) = 0;
  // When the policy wants to decide again if nothing else happens first (infinity: never).
  virtual double next_decision(const PolicyInput& in) const {
    (void)in;
    return std::numeric_limits<double>::infinity();
  }
};

struct PolicyOptions {
  // tiresias: the queues' thresholds of attained service in rank-seconds, ascending (queue k
  // holds jobs with thresholds[k-1] <= attained < thresholds[k]); empty: one queue (the command
  // passes default_thresholds).
  std::vector<double> thresholds;
  // optimus: probe runs per job before it is allocated, and the seconds of progress each lasts.
  int probes = 5;
  double probe_seconds = 90;
  // model: the knee of marginal_allocation.h (shortest first, each job while one more rank saves
  // at least this fraction of a linear speedup's); 0: Optimus's greedy from every job's minimum.
  double knee = 0.5;
};

const std::vector<std::string>& policy_names();  // fifo, srtf, tiresias, optimus, model
// Throws InputError listing policy_names for another name.
std::unique_ptr<Policy> make_policy(const std::string& name, const PolicyOptions& options);

std::unique_ptr<Policy> make_fifo_policy();
std::unique_ptr<Policy> make_srtf_policy();
std::unique_ptr<Policy> make_tiresias_policy(std::vector<double> thresholds);
std::unique_ptr<Policy> make_optimus_policy(int probes, double probe_seconds);
std::unique_ptr<Policy> make_model_policy(double knee);

// tiresias's default thresholds for a queue: one, at the median over the jobs of the service
// each demands at its requested ranks (ranks x predicted seconds), so that about half the jobs
// finish in the first queue; Tiresias's own simulator sets one threshold by hand (3600).
std::vector<double> default_thresholds(const std::vector<Job>& jobs, const PriceTable& prices);

// For the policies that run jobs at their requested ranks: gives each job of `order` (indices
// into in.jobs) its max_ranks while they fit. strict: the first that does not fit stops the walk
// (head-of-line blocking); otherwise later, smaller jobs may take what is left (backfill). A job
// that runs gets reasons[i] (indexed like in.jobs) as its reason; one left out gets ranks 0 and
// a reason saying what it waits for.
std::vector<Assignment> pack_requested(const PolicyInput& in, const std::vector<std::size_t>& order, bool strict,
                                       const std::vector<std::string>& reasons);

}  // namespace dtrain::schedule
