// optimus: Peng et al., "Optimus: An Efficient Dynamic Resource Scheduler for Deep Learning
// Clusters", EuroSys 2018, without parameter servers. Optimus knows no job's speed before it runs:
//   1. probe runs: a new job runs K (5) probes at rank counts spread evenly over [min, max] (the
//      public re-implementation probes each for 90 s and needs >= 5 points for its synchronous
//      model), one after another, each `probe_seconds` of progress long. Probes are charged in
//      full: they hold their ranks, each change of rank count pays the preemption cost, and the
//      job's progress during them counts at the probe's speed. A probe takes only free ranks (it
//      never stops a fitted job or another probe); probing jobs go in submit order.
//   2. the speed model: T(w) = a/w + b + c w fitted to the probes' measured times (speed_fit.h;
//      in simulation a probe measures the price table's truth at its rank count).
//   3. allocation: greedy marginal gain (marginal_allocation.h) on the fitted remaining times,
//      remaining fraction x T(w), among the jobs whose probes are done.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>

#include "core/error.h"
#include "perfmodel/report.h"
#include "schedule/marginal_allocation.h"
#include "schedule/policy.h"
#include "schedule/schedule_report.h"
#include "schedule/speed_fit.h"

namespace dtrain::schedule {
namespace {

// Progress this close to a probe's length counts as the whole probe (the simulator's sums drift).
constexpr double kProbeSlack = 1e-6;

struct ProbeState {
  std::vector<int> plan;  // rank counts to probe, ascending
  std::size_t next = 0;   // probes done
  std::vector<std::pair<double, double>> measured;
  bool fitted = false;
  SpeedCurve curve;
};

std::vector<int> probe_plan(int lo, int hi, int probes) {
  std::vector<int> plan;
  const int k = std::min(probes, hi - lo + 1);
  for (int i = 0; i < k; ++i) {
    const int w = k == 1 ? lo : lo + static_cast<int>(std::lround(static_cast<double>(i) * (hi - lo) / (k - 1)));
    if (plan.empty() || plan.back() != w) plan.push_back(w);
  }
  return plan;
}

class OptimusPolicy : public Policy {
 public:
  OptimusPolicy(int probes, double probe_seconds) : probes_(probes), probe_seconds_(probe_seconds) {
    if (probes < 1) throw InputError(fmt::format("--probes must be at least 1, got {}", probes));
    if (!(probe_seconds > 0)) throw InputError(fmt::format("--probe-seconds must be positive, got {}", probe_seconds));
  }

  std::string name() const override { return "optimus"; }

  std::vector<Assignment> allocate(const PolicyInput& in) override {
    std::vector<Assignment> out(in.jobs.size());
    // Record the probes that ended; fit once all of a job's are in.
    for (const JobView& j : in.jobs) {
      ProbeState& s = state(j);
      if (s.fitted || !j.probe || j.ranks != s.plan[s.next] || !probe_done(j)) continue;
      const double measured = in.price(j).seconds(j.ranks);  // the probe's speed, as the whole work's time
      s.measured.emplace_back(j.ranks, measured);
      if (++s.next == s.plan.size()) {
        s.curve = fit_speed_curve(s.measured);
        s.fitted = true;
      }
    }
    // Ranks held by fitted jobs and by running probes stay theirs (a probe never stops another);
    // the next probe of each job, in submit order, takes what is free beside them.
    int held = 0;
    for (const JobView& j : in.jobs) held += j.ranks;
    int free = in.capacity - held;
    int probing = 0;
    for (std::size_t i = 0; i < in.jobs.size(); ++i) {
      const JobView& j = in.jobs[i];
      const ProbeState& s = state(j);
      if (s.fitted) continue;
      const int want = s.plan[s.next];
      Assignment& a = out[i];
      a.probe = true;
      if (want - j.ranks <= free) {
        a.ranks = want;
        a.reason = fmt::format("probe run {} of {} at {} ({} of progress)", s.next + 1, s.plan.size(), rank_count(want),
                               perf::format_seconds(probe_seconds_));
      } else if (j.ranks > 0) {
        a.ranks = j.ranks;
        a.reason = fmt::format("probe run {} needs {}, {} free: goes on at {}", s.next + 1, rank_count(want), free,
                               rank_count(j.ranks));
      } else {
        a.probe = false;
        a.reason = fmt::format("waits to probe: probe run {} needs {}, {} free", s.next + 1, rank_count(want), free);
      }
      free -= a.ranks - j.ranks;
      probing += a.ranks;
    }
    // Greedy marginal gain on the fitted curves over what the probes left.
    std::vector<std::size_t> fitted;
    std::vector<MarginalJob> jobs;
    for (std::size_t i = 0; i < in.jobs.size(); ++i) {
      const JobView& j = in.jobs[i];
      const ProbeState& s = state(j);
      if (!s.fitted) continue;
      MarginalJob m;
      m.name = j.name;
      m.min_ranks = j.min_ranks;
      m.max_ranks = j.max_ranks;
      m.current = j.ranks;
      m.restart = in.price(j).preemption.total();  // Optimus's own restart cost is known to it
      for (int w = j.min_ranks; w <= j.max_ranks; ++w) m.remaining.push_back(j.remaining * s.curve.at(w));
      fitted.push_back(i);
      jobs.push_back(std::move(m));
    }
    const MarginalDecision d = allocate_by_marginal_gain(jobs, in.capacity - probing);
    for (std::size_t k = 0; k < fitted.size(); ++k) {
      const ProbeState& s = state(in.jobs[fitted[k]]);
      out[fitted[k]].ranks = d.ranks[k];
      out[fitted[k]].reason = fmt::format("marginal gain on the fitted T(w) = {:.4g}/w + {:.4g} + {:.4g} w: {}",
                                          s.curve.a, s.curve.b, s.curve.c, d.reasons[k]);
    }
    return out;
  }

  // When the earliest running probe at its planned rank count ends.
  double next_decision(const PolicyInput& in) const override {
    double next = std::numeric_limits<double>::infinity();
    for (const JobView& j : in.jobs) {
      if (!j.probe || j.ranks == 0) continue;
      auto it = states_.find(j.id);
      // A probe that ended but whose next rank count found no room waits for another event.
      if (it == states_.end() || it->second.fitted || j.ranks != it->second.plan[it->second.next]) continue;
      const double left = std::max(0.0, probe_seconds_ - j.progress_seconds);
      next = std::min(next, in.now + j.overhead_left + left);
    }
    return next;
  }

 private:
  bool probe_done(const JobView& j) const {
    return j.overhead_left <= 0 && j.progress_seconds >= probe_seconds_ - kProbeSlack;
  }

  ProbeState& state(const JobView& j) {
    auto it = states_.find(j.id);
    if (it == states_.end()) {
      ProbeState s;
      s.plan = probe_plan(j.min_ranks, j.max_ranks, probes_);
      it = states_.emplace(j.id, std::move(s)).first;
    }
    return it->second;
  }

  int probes_;
  double probe_seconds_;
  std::map<std::size_t, ProbeState> states_;
};

}  // namespace

std::unique_ptr<Policy> make_optimus_policy(int probes, double probe_seconds) {
  return std::make_unique<OptimusPolicy>(probes, probe_seconds);
}

}  // namespace dtrain::schedule
