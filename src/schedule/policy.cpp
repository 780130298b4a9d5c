#include "schedule/policy.h"

#include <fmt/format.h>

#include "core/error.h"
#include "schedule/schedule_report.h"

namespace dtrain::schedule {

JobView JobView::of(std::size_t id, const Job& job) {
  JobView v;
  v.id = id;
  v.name = job.name;
  v.submit_time = job.submit_time;
  v.min_ranks = job.min_ranks;
  v.max_ranks = job.max_ranks;
  return v;
}

const std::vector<std::string>& policy_names() {
  static const std::vector<std::string> names{"fifo", "srtf", "tiresias", "optimus", "model"};
  return names;
}

std::unique_ptr<Policy> make_policy(const std::string& name, const PolicyOptions& o) {
  if (name == "fifo") return make_fifo_policy();
  if (name == "srtf") return make_srtf_policy();
  if (name == "tiresias") return make_tiresias_policy(o.thresholds);
  if (name == "optimus") return make_optimus_policy(o.probes, o.probe_seconds);
  if (name == "model") return make_model_policy(o.knee);
  throw InputError(fmt::format("unknown policy '{}'; valid: {}, all", name, fmt::join(policy_names(), ", ")));
}

std::vector<Assignment> pack_requested(const PolicyInput& in, const std::vector<std::size_t>& order, bool strict,
                                       const std::vector<std::string>& reasons) {
  std::vector<Assignment> out(in.jobs.size());
  int left = in.capacity;
  const JobView* blocker = nullptr;
  for (std::size_t i : order) {
    const JobView& j = in.jobs[i];
    Assignment& a = out[i];
    if (blocker == nullptr && j.max_ranks <= left) {
      a.ranks = j.max_ranks;
      a.reason = reasons[i];
      left -= j.max_ranks;
      continue;
    }
    const std::string wait =
        blocker != nullptr ? fmt::format("waits behind job {} (strict first in, first out)", blocker->name)
                           : fmt::format("needs {}, {} free after the jobs before it", rank_count(j.max_ranks), left);
    a.reason = j.ranks > 0 ? "stopped: " + wait : "waits: " + wait;
    if (strict && blocker == nullptr) blocker = &j;
  }
  return out;
}

}  // namespace dtrain::schedule
