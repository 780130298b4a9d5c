// What every job of a queue costs, priced before it runs: its whole work's time at each rank
// count it may run on, with the step's terms that explain the time, and what preempting it costs.
// The policies and the simulator read only this table, so they can be tested on tables made by
// hand and run with the model's prices alike.
//
// The model's prices (price_jobs): a job's work is a fixed number of samples, so at w ranks of
// per-rank batch B it takes  steps(w) x step(w) (+ the evaluation after each epoch for dtrain
// rows), where steps(w) = epochs x floor(train samples / (w B)) (dtrain rows, as the sampler
// counts them) or ceil(samples / (w B)) (Tiresias rows), and step(w) is the model's step
// (perfmodel/step_model.h) with the allreduce algorithm and bucket size the model chooses for w
// ranks (perfmodel/auto_choice.h: the shortest predicted step among every candidate).
//
// Preemption (cluster.h): checkpoint write + requeue wait + restart + resume, where the
// checkpoint holds parameters x 4 bytes x (1 + optimizer slots); or, on a cluster that suspends,
// a stop costs the suspend latency when the job resumes on the same ranks.
#pragma once

#include <algorithm>
#include <string>
#include <vector>

#include "schedule/cluster.h"
#include "schedule/job.h"

namespace dtrain::schedule {

struct RankPrice {
  int ranks = 0;
  double seconds = 0;  // the job's whole work at this many ranks
  double steps = 0;    // of the whole work
  // Per step: the step, the workers' own compute, and the rest (exposed communication, the wait
  // for the slowest worker, data loading): step = compute + other.
  double step = 0, compute = 0, other = 0;
  double comm = 0;          // the communication thread's busy time per step, before overlap
  double straggler = 0;     // the wait for the slowest worker per step, part of `other`
  double eval_seconds = 0;  // of the whole work (every epoch's evaluation)
  std::string exchange;     // "ring, 4 MiB buckets" ("-" on one rank)
};

struct PreemptionCost {
  double checkpoint_bytes = 0;
  double write = 0, requeue = 0, restart = 0, resume = 0;  // seconds
  // A stop suspends the job in place (cluster.h, PreemptBy::kSuspend): resumed on the ranks it
  // held, it waits `suspend` seconds; a resize still costs total().
  bool suspends = false;
  double suspend = 0;
  double total() const { return write + requeue + restart + resume; }
  // The delay before progress when the job restarts `waited` seconds after it was stopped: the
  // checkpoint write and Slurm's requeue wait run on the clock from the stop, so a job that sat
  // in the queue that long pays only the restart and resume (total() when restarted at once).
  double after_waiting(double waited) const { return restart + resume + std::max(0.0, write + requeue - waited); }
};

struct JobPrice {
  int min_ranks = 1, max_ranks = 1;
  std::vector<RankPrice> by_ranks;  // ranks min_ranks .. max_ranks
  PreemptionCost preemption;
  // From the decision to start the job to its first step: the cluster's launch, process start
  // and data loading (the cluster's restart seconds); 0 in hand-made prices.
  double launch = 0;

  const RankPrice& at(int ranks) const;  // InternalError outside [min_ranks, max_ranks]
  double seconds(int ranks) const { return at(ranks).seconds; }
  // The rank count with the least time (ties: the fewest ranks).
  int fastest_ranks() const;
};

struct PriceTable {
  std::vector<JobPrice> jobs;  // in the trace's order
};

// The model's prices of every job on the cluster (resolved: resolve_cluster). Throws InputError
// naming the job for a configuration the model refuses (more samples per step than the dataset).
PriceTable price_jobs(const std::vector<Job>& jobs, const Cluster& cluster, const perf::Profile& profile);

// A price by hand: seconds[i] is the whole work at min_ranks + i ranks (steps 1, step = compute =
// the seconds); preemption costs `preemption_seconds` at every restart (PreemptionCost::restart).
JobPrice hand_price(int min_ranks, const std::vector<double>& seconds, double preemption_seconds);

}  // namespace dtrain::schedule
