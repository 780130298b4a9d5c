// fifo: first in, first out. Jobs run in submit order, each at the ranks it requests; the first
// job that does not fit blocks every job behind it (strict head of line, as a plain batch queue
// without backfill), and a running job is never preempted: the jobs before it arrived earlier
// and already run. The baseline of the Tiresias and Optimus papers.
#include <fmt/format.h>

#include <numeric>

#include "schedule/policy.h"
#include "schedule/schedule_report.h"

namespace dtrain::schedule {
namespace {

class FifoPolicy : public Policy {
 public:
  std::string name() const override { return "fifo"; }

  std::vector<Assignment> allocate(const PolicyInput& in) override {
    std::vector<std::size_t> order(in.jobs.size());
    std::iota(order.begin(), order.end(), std::size_t{0});  // in.jobs is in submit order
    std::vector<std::string> reasons;
    for (const JobView& j : in.jobs) {
      reasons.push_back(fmt::format("first in, first out at its requested {}", rank_count(j.max_ranks)));
    }
    return pack_requested(in, order, true, reasons);
  }
};

}  // namespace

std::unique_ptr<Policy> make_fifo_policy() { return std::make_unique<FifoPolicy>(); }

}  // namespace dtrain::schedule
