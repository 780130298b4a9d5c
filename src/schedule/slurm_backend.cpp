#include "schedule/slurm_backend.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <limits>
#include <thread>

#include "core/error.h"
#include "schedule/fixed_ranks.h"
#include "schedule/slurm_client.h"

namespace dtrain::schedule {
namespace {

constexpr double kSlurmNever = std::numeric_limits<double>::infinity();

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// A job as the scheduler sees it on the cluster.
struct LiveJob {
  bool arrived = false, done = false;
  std::string slurm_id;
  int ranks = 0;           // what the policy gave it (0: stopped or waiting)
  int first_ranks = 0;     // the count it first ran with: all it may run with
  bool running = false;    // Slurm reports it RUNNING
  bool suspended = false;  // stopped by scontrol suspend (else by requeuehold)
  double remaining = 1, attained = 0, progress_seconds = 0;
  double segment_start = 0;
};

class SlurmRun {
 public:
  SlurmRun(const std::vector<Job>& jobs, const PriceTable& prices, int capacity, Policy& policy,
           const SlurmRunOptions& options, const std::function<void(const std::string&)>& note)
      : jobs_(jobs),
        prices_(prices),
        capacity_(capacity),
        policy_(policy),
        o_(options),
        note_(note),
        live_(jobs.size()) {
    result_.policy = policy.name();
    result_.capacity = capacity;
    result_.jobs.resize(jobs.size());
    for (std::size_t i = 0; i < jobs.size(); ++i) {
      result_.jobs[i].submit = jobs[i].submit_time;
      (void)train_arguments(jobs[i], o_);  // refuses what cannot run before anything is submitted
    }
    std::filesystem::create_directories(o_.work_dir);
  }

  ScheduleResult run() {
    const auto t0 = std::chrono::steady_clock::now();
    double next_slice = o_.slice > 0 ? o_.slice : kSlurmNever, policy_time = kSlurmNever, last = 0;
    std::size_t finished = 0;
    while (finished < jobs_.size()) {
      const double t = seconds_since(t0);
      advance(last, t);
      last = t;
      bool decide = false;
      for (std::size_t i = 0; i < jobs_.size(); ++i) {
        if (!live_[i].arrived && jobs_[i].submit_time <= t) {
          live_[i].arrived = decide = true;
          say(t, fmt::format("{} arrives", jobs_[i].name));
        }
      }
      finished += observe(t, decide);
      if (t >= next_slice) {
        while (next_slice <= t) next_slice += o_.slice;
        decide = true;
      }
      if (t >= policy_time) decide = true;
      if (decide && finished < jobs_.size()) {
        apply(t, policy_.allocate(input(t)));
        policy_time = policy_.next_decision(input(t));
      }
      std::this_thread::sleep_for(std::chrono::duration<double>(o_.poll_seconds));
    }
    summarise(result_);
    if (!failed_.empty()) {
      throw Error(fmt::format("{} job(s) did not complete: {}", failed_.size(), fmt::join(failed_, "; ")));
    }
    return result_;
  }

 private:
  void say(double t, const std::string& what) {
    if (note_) note_(fmt::format("t={:.1f} s: {}", t, what));
  }

  // Progress of the running jobs by the model's prices.
  void advance(double from, double to) {
    const double dt = to - from;
    for (std::size_t i = 0; i < live_.size(); ++i) {
      LiveJob& s = live_[i];
      if (!s.running || s.ranks == 0) continue;
      s.remaining = std::max(0.01, s.remaining - dt / prices_.jobs[i].seconds(s.ranks));
      s.progress_seconds += dt;
      s.attained += s.ranks * dt;
      result_.jobs[i].rank_seconds += s.ranks * dt;
    }
  }

  // Reads the queue; returns how many jobs finished. Sets `decide` when one did.
  std::size_t observe(double t, bool& decide) {
    std::vector<std::string> ids;
    for (const LiveJob& s : live_) {
      if (!s.slurm_id.empty() && !s.done) ids.push_back(s.slurm_id);
    }
    const auto states = slurm_.states(ids);
    std::size_t finished = 0;
    for (std::size_t i = 0; i < live_.size(); ++i) {
      LiveJob& s = live_[i];
      if (s.slurm_id.empty() || s.done) continue;
      const auto it = states.find(s.slurm_id);
      const bool running = it != states.end() && it->second == "RUNNING";
      if (it == states.end()) {
        close_segment(i, t);
        s.done = true;
        s.running = false;
        s.ranks = 0;
        result_.jobs[i].end = t;
        ++finished;
        decide = true;
        const std::string state = slurm_.final_state(s.slurm_id);
        if (state != "COMPLETED") {
          failed_.push_back(fmt::format("{} (job {}, {}; its output: {}.out)", jobs_[i].name, s.slurm_id,
                                        state.empty() ? "state unknown" : state,
                                        (std::filesystem::path(o_.work_dir) / jobs_[i].name).string()));
        }
        say(t, fmt::format("{} {} (job {}): completion time {:.1f} s", jobs_[i].name,
                           state == "COMPLETED" ? "finished" : "ended " + state, s.slurm_id, t - jobs_[i].submit_time));
        continue;
      }
      if (running && !s.running) {
        if (result_.jobs[i].start < 0) result_.jobs[i].start = t;
        s.segment_start = t;
        say(t, fmt::format("{} runs on {} ranks (job {})", jobs_[i].name, s.ranks, s.slurm_id));
      } else if (!running && s.running) {
        close_segment(i, t);
      }
      s.running = running;
    }
    return finished;
  }

  void close_segment(std::size_t i, double t) {
    LiveJob& s = live_[i];
    if (s.running && t > s.segment_start) result_.jobs[i].segments.push_back({s.segment_start, t, s.first_ranks});
    s.segment_start = t;
  }

  PolicyInput input(double t) const {
    PolicyInput in;
    in.now = t;
    in.capacity = capacity_;
    in.prices = &prices_;
    for (std::size_t i = 0; i < jobs_.size(); ++i) {
      const LiveJob& s = live_[i];
      if (!s.arrived || s.done) continue;
      JobView v = JobView::of(i, jobs_[i]);
      v.attained = s.attained;
      v.remaining = s.remaining;
      v.ranks = s.ranks;
      v.progress_seconds = s.progress_seconds;
      in.jobs.push_back(std::move(v));
    }
    std::stable_sort(in.jobs.begin(), in.jobs.end(),
                     [](const JobView& a, const JobView& b) { return a.submit_time < b.submit_time; });
    return in;
  }

  void apply(double t, std::vector<Assignment> assignments) {
    const PolicyInput in = input(t);
    DT_CHECK_EQ(assignments.size(), in.jobs.size());
    std::vector<int> first_ranks;
    for (const LiveJob& s : live_) first_ranks.push_back(s.first_ranks);
    keep_first_ranks(in, first_ranks, assignments);
    for (std::size_t k = 0; k < in.jobs.size(); ++k) {
      const std::size_t i = in.jobs[k].id;
      LiveJob& s = live_[i];
      const int ranks = assignments[k].ranks;
      if (ranks == s.ranks) continue;
      result_.actions.push_back({t, i, ranks, s.ranks, false, s.remaining, assignments[k].reason});
      const Job& job = jobs_[i];
      if (ranks == 0) {
        // Only a running job can be suspended; one Slurm has not started yet is held instead.
        const bool suspends = prices_.jobs[i].preemption.suspends && s.running;
        say(t, fmt::format("{} stops: {} (scontrol {} {})", job.name, assignments[k].reason,
                           suspends ? "suspend" : "requeuehold", s.slurm_id));
        s.suspended = suspends;
        if (suspends) {
          slurm_.suspend(s.slurm_id);
        } else {
          slurm_.requeue_hold(s.slurm_id);
        }
        ++result_.jobs[i].preemptions;
      } else if (s.slurm_id.empty()) {
        s.first_ranks = ranks;
        const std::string base = (std::filesystem::path(o_.work_dir) / job.name).string();
        std::vector<std::string> options{"-n",
                                         std::to_string(ranks),
                                         "--requeue",
                                         "--open-mode=append",
                                         fmt::format("--signal=B:USR1@{}", o_.warning_seconds),
                                         "-J",
                                         job.name,
                                         "-o",
                                         base + ".out"};
        if (!o_.partition.empty()) options.insert(options.end(), {"-p", o_.partition});
        std::vector<std::string> args{o_.launcher, o_.dtrain};
        const std::vector<std::string> train = train_arguments(job, o_);
        args.insert(args.end(), train.begin(), train.end());
        s.slurm_id = slurm_.submit(options, o_.job_script, args);
        say(t, fmt::format("{} starts on {} ranks: {} (job {})", job.name, ranks, assignments[k].reason, s.slurm_id));
      } else {
        say(t, fmt::format("{} resumes on {} ranks: {} (scontrol {} {})", job.name, ranks, assignments[k].reason,
                           s.suspended ? "resume" : "release", s.slurm_id));
        if (s.suspended) {
          slurm_.resume(s.slurm_id);
        } else {
          slurm_.release(s.slurm_id);
        }
      }
      s.ranks = ranks;
    }
  }

  const std::vector<Job>& jobs_;
  const PriceTable& prices_;
  int capacity_;
  Policy& policy_;
  const SlurmRunOptions& o_;
  const std::function<void(const std::string&)>& note_;
  SlurmClient slurm_;
  std::vector<LiveJob> live_;
  std::vector<std::string> failed_;
  ScheduleResult result_;
};

}  // namespace

std::vector<std::string> train_arguments(const Job& job, const SlurmRunOptions& o) {
  if (job.epochs <= 0) {
    throw InputError(fmt::format(
        "job {} (row {}) is a Tiresias row (its work is iterations, which dtrain train has no flag for): run "
        "it in simulation, or give the trace in dtrain's format (name,model,dataset,epochs,...) to submit it",
        job.name, job.row));
  }
  const std::string base = (std::filesystem::path(o.work_dir) / job.name).string();
  std::vector<std::string> args{"train",
                                "--model",
                                job.model,
                                "--dataset",
                                job.dataset,
                                "--epochs",
                                std::to_string(job.epochs),
                                "--batch",
                                std::to_string(job.batch),
                                "--threads",
                                std::to_string(o.threads),
                                "--checkpoint-dir",
                                base,
                                "--log",
                                base + ".jsonl",
                                "--progress",
                                "lines"};
  args.insert(args.end(), o.train_flags.begin(), o.train_flags.end());
  return args;
}

ScheduleResult run_on_slurm(const std::vector<Job>& jobs, const PriceTable& prices, int capacity, Policy& policy,
                            const SlurmRunOptions& options, const std::function<void(const std::string&)>& note) {
  if (options.dtrain.empty() || options.job_script.empty() || options.work_dir.empty()) {
    throw InputError("running on Slurm needs the dtrain program, the job script and a work directory");
  }
  SlurmRun run(jobs, prices, capacity, policy, options, note);
  return run.run();
}

}  // namespace dtrain::schedule
