#include "schedule/simulator.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

#include "core/error.h"
#include "schedule/fixed_ranks.h"

namespace dtrain::schedule {
namespace {

constexpr double kSimulationNever = std::numeric_limits<double>::infinity();

// A job's state during the simulation.
struct SimJob {
  bool arrived = false, done = false;
  double remaining = 1;  // fraction of the work left
  int ranks = 0;
  bool probe = false;
  bool owes_restart = false;  // stopped while running: its next start pays the preemption cost
  double stopped_at = 0;      // when it was stopped (owes_restart)
  int suspended_ranks = 0;    // stopped by a suspension, on this many ranks (0: not suspended)
  double overhead_left = 0;
  double progress_seconds = 0;  // at the current ranks
  double attained = 0;
  double segment_start = 0, segment_overhead = 0;
};

class Simulation {
 public:
  Simulation(const std::vector<Job>& jobs, const PriceTable& prices, int capacity, Policy& policy, bool fixed_ranks)
      : jobs_(jobs),
        prices_(prices),
        capacity_(capacity),
        policy_(policy),
        state_(jobs.size()),
        fixed_ranks_(fixed_ranks),
        first_ranks_(jobs.size(), 0) {
    DT_CHECK_EQ(jobs.size(), prices.jobs.size());
    DT_CHECK_GT(capacity, 0);
    result_.policy = policy.name();
    result_.capacity = capacity;
    result_.jobs.resize(jobs.size());
    for (std::size_t i = 0; i < jobs.size(); ++i) result_.jobs[i].submit = jobs[i].submit_time;
    arrival_.resize(jobs.size());
    std::iota(arrival_.begin(), arrival_.end(), std::size_t{0});
    std::stable_sort(arrival_.begin(), arrival_.end(),
                     [&](std::size_t a, std::size_t b) { return jobs[a].submit_time < jobs[b].submit_time; });
  }

  ScheduleResult run(double slice) {
    const std::size_t n = jobs_.size();
    if (n == 0) return result_;
    double t = jobs_[arrival_[0]].submit_time;
    double next_slice = slice > 0 ? (std::floor(t / slice) + 1) * slice : kSimulationNever;
    double policy_time = kSimulationNever;
    std::size_t next_arrival = 0, finished = 0;
    int idle_steps = 0;
    bool decide = false;
    while (finished < n) {
      while (next_arrival < n && jobs_[arrival_[next_arrival]].submit_time <= t) {
        state_[arrival_[next_arrival++]].arrived = true;
        decide = true;
      }
      if (decide) {
        std::vector<Assignment> assignments = policy_.allocate(input(t));
        if (fixed_ranks_) keep_first_ranks(input(t), first_ranks_, assignments);
        apply(t, assignments);
        policy_time = policy_.next_decision(input(t));
        decide = false;
        if (running() == 0 && next_arrival == n && policy_time == kSimulationNever) {
          throw InternalError(fmt::format("policy {} leaves {} jobs waiting on an idle cluster at t={} s",
                                          policy_.name(), n - finished, t));
        }
      }
      // The next event: an arrival, a completion, a slice boundary or the policy's own time.
      double next = next_arrival < n ? jobs_[arrival_[next_arrival]].submit_time : kSimulationNever;
      std::vector<double> finish(n, kSimulationNever);
      for (std::size_t i = 0; i < n; ++i) {
        const SimJob& s = state_[i];
        if (s.ranks == 0) continue;
        finish[i] = t + s.overhead_left + s.remaining * prices_.jobs[i].seconds(s.ranks);
        next = std::min(next, finish[i]);
      }
      next = std::min({next, next_slice, std::max(policy_time, t)});
      DT_CHECK(next < kSimulationNever, "no event left with {} jobs unfinished", n - finished);
      idle_steps = next > t ? 0 : idle_steps + 1;
      DT_CHECK_LT(idle_steps, static_cast<int>(4 * n + 16));  // decisions that never let time pass
      advance(t, next);
      t = next;
      for (std::size_t i = 0; i < n; ++i) {
        if (finish[i] <= t + 1e-9 * std::max(1.0, std::abs(t))) {
          finish_job(i, t);
          ++finished;
          decide = true;
        }
      }
      if (t >= next_slice) {
        while (next_slice <= t) next_slice += slice;
        decide = true;
      }
      if (t >= policy_time) decide = true;
    }
    summarise(result_);
    return result_;
  }

 private:
  int running() const {
    int r = 0;
    for (const SimJob& s : state_) r += s.ranks > 0 ? 1 : 0;
    return r;
  }

  PolicyInput input(double t) const {
    PolicyInput in;
    in.now = t;
    in.capacity = capacity_;
    in.prices = &prices_;
    for (std::size_t i : arrival_) {
      const SimJob& s = state_[i];
      if (!s.arrived || s.done) continue;
      JobView v = JobView::of(i, jobs_[i]);
      v.attained = s.attained;
      v.remaining = s.remaining;
      v.ranks = s.ranks;
      v.probe = s.probe;
      v.overhead_left = s.overhead_left;
      v.progress_seconds = s.progress_seconds;
      in.jobs.push_back(std::move(v));
    }
    return in;
  }

  void close_segment(std::size_t i, double t) {
    SimJob& s = state_[i];
    if (s.ranks > 0 && t > s.segment_start) {
      result_.jobs[i].segments.push_back({s.segment_start, t, s.ranks, s.segment_overhead, s.probe});
    }
    s.segment_start = t;
    s.segment_overhead = 0;
  }

  void apply(double t, const std::vector<Assignment>& assignments) {
    const PolicyInput in = input(t);
    DT_CHECK_EQ(assignments.size(), in.jobs.size());
    int total = 0;
    for (std::size_t k = 0; k < in.jobs.size(); ++k) {
      const Assignment& a = assignments[k];
      const JobView& v = in.jobs[k];
      DT_CHECK(a.ranks == 0 || (a.ranks >= v.min_ranks && a.ranks <= v.max_ranks),
               "policy {} gives job {} {} ranks outside [{}, {}]", policy_.name(), v.name, a.ranks, v.min_ranks,
               v.max_ranks);
      total += a.ranks;
    }
    DT_CHECK(total <= capacity_, "policy {} allocates {} ranks of {}", policy_.name(), total, capacity_);
    for (std::size_t k = 0; k < in.jobs.size(); ++k) {
      const Assignment& a = assignments[k];
      const std::size_t i = in.jobs[k].id;
      SimJob& s = state_[i];
      const bool probe = a.ranks > 0 && a.probe;
      if (a.ranks == s.ranks) {
        if (probe != s.probe) {  // a probe's last ranks become the job's own: no restart
          close_segment(i, t);
          s.probe = probe;
        }
        continue;
      }
      result_.actions.push_back({t, i, a.ranks, s.ranks, probe, s.remaining, a.reason});
      JobOutcome& o = result_.jobs[i];
      const PreemptionCost& cost = prices_.jobs[i].preemption;
      if (s.ranks > 0) {
        close_segment(i, t);
        ++o.preemptions;
        s.overhead_left = a.ranks > 0 ? cost.total() : 0;
        s.owes_restart = a.ranks == 0;
        s.suspended_ranks = a.ranks == 0 && cost.suspends ? s.ranks : 0;
        s.stopped_at = t;
      } else {
        if (s.suspended_ranks > 0) {
          s.overhead_left = a.ranks == s.suspended_ranks ? cost.suspend : cost.total();
        } else if (s.owes_restart) {
          s.overhead_left = cost.after_waiting(t - s.stopped_at);
        }
        s.owes_restart = false;
        s.suspended_ranks = 0;
        if (o.start < 0) {
          o.start = t;
          s.overhead_left = prices_.jobs[i].launch;
          if (!probe) first_ranks_[i] = a.ranks;
        }
      }
      s.ranks = a.ranks;
      s.probe = probe;
      s.progress_seconds = 0;
      s.segment_start = t;
      s.segment_overhead = 0;
    }
  }

  void advance(double t, double next) {
    const double dt = next - t;
    if (dt <= 0) return;
    for (std::size_t i = 0; i < state_.size(); ++i) {
      SimJob& s = state_[i];
      if (s.ranks == 0) continue;
      const double overhead = std::min(s.overhead_left, dt);
      const double progress = dt - overhead;
      s.overhead_left -= overhead;
      s.segment_overhead += overhead;
      s.remaining = std::max(0.0, s.remaining - progress / prices_.jobs[i].seconds(s.ranks));
      s.progress_seconds += progress;
      s.attained += s.ranks * dt;
      JobOutcome& o = result_.jobs[i];
      o.rank_seconds += s.ranks * dt;
      o.overhead_rank_seconds += s.ranks * overhead;
      if (s.probe) o.probe_rank_seconds += s.ranks * dt;
    }
  }

  void finish_job(std::size_t i, double t) {
    close_segment(i, t);
    SimJob& s = state_[i];
    s.done = true;
    s.remaining = 0;
    s.ranks = 0;
    result_.jobs[i].end = t;
  }

  const std::vector<Job>& jobs_;
  const PriceTable& prices_;
  int capacity_;
  Policy& policy_;
  std::vector<SimJob> state_;
  std::vector<std::size_t> arrival_;  // the trace's indices by submit time (ties: trace order)
  ScheduleResult result_;
  bool fixed_ranks_;
  std::vector<int> first_ranks_;  // by job: the count it first ran with (0: not yet)
};

}  // namespace

void summarise(ScheduleResult& r) {
  double first = kSimulationNever, last = 0, jct = 0, held = 0;
  for (const JobOutcome& o : r.jobs) {
    first = std::min(first, o.submit);
    last = std::max(last, o.end);
    jct += o.jct();
    held += o.rank_seconds;
    r.preemptions += o.preemptions;
    r.probe_rank_seconds += o.probe_rank_seconds;
    r.overhead_rank_seconds += o.overhead_rank_seconds;
  }
  r.mean_jct = jct / static_cast<double>(r.jobs.size());
  r.makespan = last - first;
  r.utilisation = r.makespan > 0 ? held / (r.capacity * r.makespan) : 0;
}

ScheduleResult simulate(const std::vector<Job>& jobs, const PriceTable& prices, int capacity, Policy& policy,
                        const SimulationOptions& options) {
  Simulation sim(jobs, prices, capacity, policy, options.fixed_ranks);
  return sim.run(options.slice);
}

}  // namespace dtrain::schedule
