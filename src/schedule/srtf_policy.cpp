// srtf: shortest remaining time first (an oracle: it knows every job's remaining time, here the
// model's prediction at the requested ranks, remaining fraction x seconds(max_ranks)). At each
// decision the jobs run in that order at their requested ranks while they fit, smaller ones
// backfilling what is left, and a running job that is no longer among them is preempted (it pays
// its preemption cost). Schrage 1968 for one server; the "SRTF" baseline of the Tiresias paper
// and msr-fiddle/blox.
#include <fmt/format.h>

#include <algorithm>
#include <numeric>

#include "perfmodel/report.h"
#include "schedule/policy.h"
#include "schedule/schedule_report.h"

namespace dtrain::schedule {
namespace {

class SrtfPolicy : public Policy {
 public:
  std::string name() const override { return "srtf"; }

  std::vector<Assignment> allocate(const PolicyInput& in) override {
    std::vector<double> left(in.jobs.size());
    for (std::size_t i = 0; i < in.jobs.size(); ++i) {
      const JobView& j = in.jobs[i];
      left[i] = j.remaining * in.price(j).seconds(j.max_ranks);
    }
    std::vector<std::size_t> order(in.jobs.size());
    std::iota(order.begin(), order.end(), std::size_t{0});
    std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return left[a] < left[b]; });
    std::vector<std::string> reasons(in.jobs.size());
    for (std::size_t k = 0; k < order.size(); ++k) {
      const JobView& j = in.jobs[order[k]];
      reasons[order[k]] =
          fmt::format("shortest remaining time first: {} left at its requested {}, {} of {}",
                      perf::format_seconds(left[order[k]]), rank_count(j.max_ranks), k + 1, order.size());
    }
    return pack_requested(in, order, false, reasons);
  }
};

}  // namespace

std::unique_ptr<Policy> make_srtf_policy() { return std::make_unique<SrtfPolicy>(); }

}  // namespace dtrain::schedule
