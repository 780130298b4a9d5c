// Running a queue on a real Slurm cluster under a policy: dtrain decides, Slurm allocates,
// starts, stops and requeues. The same Policy object the simulator asks (simulator.h) is asked
// here at the same moments (arrivals, completions, time-slice boundaries, its own next_decision),
// with the jobs' observed state; its decisions become Slurm commands:
//   start    sbatch -n RANKS --requeue --signal=B:USR1@N tools/slurm/dtrain-job.sh LAUNCHER
//            dtrain train ... --checkpoint-dir DIR/JOB (the job's first start);
//   stop     scontrol requeuehold: the job gets SIGTERM, checkpoints at its next step and waits,
//            held, in the queue (dtrain's preemption safety, train/stop_signal.h);
//   resume   scontrol release: Slurm starts it again and it resumes from its checkpoint.
// On a cluster that suspends (cluster.h, PreemptBy::kSuspend), stop is scontrol suspend (the job's
// processes get SIGSTOP and its CPUs go to other jobs) and resume is scontrol resume.
// A job keeps the rank count it first ran with: its checkpoint resumes exactly only at the same
// world size (a data-parallel run's steps per epoch depend on it), so a policy's resize of a job
// that has run becomes a resume at its own count. Progress is estimated from the model's prices
// (time run at w ranks / seconds(w)), which the policies need only for their ordering.
//
// Times are the scheduler's own observations, polled every poll_seconds from the start; a job's
// completion time runs from its trace submit time to the poll that finds it gone from the queue.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "schedule/job.h"
#include "schedule/job_pricing.h"
#include "schedule/policy.h"
#include "schedule/simulator.h"

namespace dtrain::schedule {

struct SlurmRunOptions {
  std::string dtrain;      // the dtrain program the jobs run (an absolute path)
  std::string job_script;  // tools/slurm/dtrain-job.sh
  std::string work_dir;    // per job: checkpoints DIR/NAME, log DIR/NAME.jsonl, output DIR/NAME.out
  std::string launcher = "srun";
  std::string partition;     // "" : the cluster's default
  int warning_seconds = 60;  // --signal=B:USR1@N: the checkpoint before a time limit
  int threads = 1;           // --threads of every rank
  double poll_seconds = 0.5;
  double slice = 600;                    // seconds between periodic decisions, as SimulationOptions::slice; 0: none
  std::vector<std::string> train_flags;  // more flags for every job's dtrain train
};

// The dtrain train arguments of a job (dtrain rows only: a Tiresias row's iteration count has no
// train flag; InputError).
std::vector<std::string> train_arguments(const Job& job, const SlurmRunOptions& options);

// Runs every job to completion; `note` gets a line per decision and per observed change.
// Throws CommError when Slurm stops answering (the jobs submitted so far are left to Slurm).
ScheduleResult run_on_slurm(const std::vector<Job>& jobs, const PriceTable& prices, int capacity, Policy& policy,
                            const SlurmRunOptions& options, const std::function<void(const std::string&)>& note);

}  // namespace dtrain::schedule
