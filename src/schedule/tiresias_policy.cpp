// tiresias: discretized two-dimensional least attained service (2D-LAS; Gu et al., "Tiresias: A
// GPU Cluster Manager for Distributed Deep Learning", NSDI 2019). It needs no knowledge of a
// job's length: a job's attained service is ranks x time held (the two dimensions), and the
// queues are bands of it: queue k holds the jobs with thresholds[k-1] <= attained <
// thresholds[k]. Lower queues go first, first in, first out within a queue (by submit time), each
// job at its requested ranks, smaller jobs backfilling; a running job demoted below the jobs that
// now fill the cluster is preempted. The policy asks to decide again when a running job crosses
// its queue's threshold, so a demotion takes effect then, not at the next slice.
// Left out: the paper's starvation guard (promoting a job that waited past a multiple of its run
// time back to the first queue) and its placement (consolidation from model profiles).
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <tuple>

#include "core/error.h"
#include "schedule/policy.h"
#include "schedule/schedule_report.h"

namespace dtrain::schedule {
namespace {

// Attained service this close under a threshold counts as over it: the simulator's sums of
// rank x time drift by rounding, and a crossing must not wait for a decision a femtosecond later.
constexpr double kThresholdSlack = 1e-6;

class TiresiasPolicy : public Policy {
 public:
  // No threshold: one queue, first in, first out with backfill.
  explicit TiresiasPolicy(std::vector<double> thresholds) : thresholds_(std::move(thresholds)) {
    for (std::size_t i = 0; i < thresholds_.size(); ++i) {
      if (!(thresholds_[i] > 0) || (i > 0 && thresholds_[i] <= thresholds_[i - 1])) {
        throw InputError(fmt::format("--thresholds must be positive rank-seconds in ascending order, got {}",
                                     fmt::join(thresholds_, ",")));
      }
    }
  }

  std::string name() const override { return "tiresias"; }

  std::vector<Assignment> allocate(const PolicyInput& in) override {
    std::vector<std::size_t> queue(in.jobs.size());
    for (std::size_t i = 0; i < in.jobs.size(); ++i) queue[i] = queue_of(in.jobs[i].attained);
    std::vector<std::size_t> order(in.jobs.size());
    std::iota(order.begin(), order.end(), std::size_t{0});
    std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
      return std::tie(queue[a], in.jobs[a].submit_time) < std::tie(queue[b], in.jobs[b].submit_time);
    });
    std::vector<std::string> reasons(in.jobs.size());
    for (std::size_t i = 0; i < in.jobs.size(); ++i) {
      const JobView& j = in.jobs[i];
      const std::size_t q = queue[i];
      std::string band = "the only queue";
      if (q < thresholds_.size()) {
        band = fmt::format("< {:.0f}", thresholds_[q]);
      } else if (q > 0) {
        band = fmt::format(">= {:.0f}", thresholds_[q - 1]);
      }
      reasons[i] = fmt::format(
          "least attained service: queue {} (attained {:.0f} rank-s, {}), first in, first out "
          "within it, at its requested {}",
          q, j.attained, band, rank_count(j.max_ranks));
    }
    return pack_requested(in, order, false, reasons);
  }

  // The first time a running job's attained service reaches its queue's upper threshold.
  double next_decision(const PolicyInput& in) const override {
    double next = std::numeric_limits<double>::infinity();
    for (const JobView& j : in.jobs) {
      const std::size_t q = queue_of(j.attained);
      if (j.ranks == 0 || q >= thresholds_.size()) continue;
      next = std::min(next, in.now + (thresholds_[q] - j.attained) / j.ranks);
    }
    return next;
  }

 private:
  std::size_t queue_of(double attained) const {
    std::size_t q = 0;
    while (q < thresholds_.size() && attained >= thresholds_[q] - kThresholdSlack) ++q;
    return q;
  }

  std::vector<double> thresholds_;
};

}  // namespace

std::unique_ptr<Policy> make_tiresias_policy(std::vector<double> thresholds) {
  return std::make_unique<TiresiasPolicy>(std::move(thresholds));
}

std::vector<double> default_thresholds(const std::vector<Job>& jobs, const PriceTable& prices) {
  std::vector<double> demand;
  for (std::size_t i = 0; i < jobs.size(); ++i) {
    demand.push_back(jobs[i].max_ranks * prices.jobs[i].seconds(jobs[i].max_ranks));
  }
  if (demand.empty()) return {3600};
  std::sort(demand.begin(), demand.end());
  const std::size_t n = demand.size();
  const double median = n % 2 == 1 ? demand[n / 2] : (demand[n / 2 - 1] + demand[n / 2]) / 2;
  return {median};
}

}  // namespace dtrain::schedule
