#include "schedule/fixed_ranks.h"

#include <fmt/format.h>

namespace dtrain::schedule {

void keep_first_ranks(const PolicyInput& in, const std::vector<int>& first_ranks,
                      std::vector<Assignment>& assignments) {
  int total = 0;
  std::vector<std::size_t> pinned;
  for (std::size_t k = 0; k < in.jobs.size(); ++k) {
    Assignment& a = assignments[k];
    const int first = first_ranks[in.jobs[k].id];
    if (a.ranks > 0 && first > 0 && a.ranks != first) {
      a.reason = fmt::format("{}; kept at the {} ranks it first ran on (a checkpoint resumes exactly only there)",
                             a.reason, first);
      a.ranks = first;
      pinned.push_back(k);
    }
    total += a.ranks;
  }
  for (auto k = pinned.rbegin(); k != pinned.rend() && total > in.capacity; ++k) {
    Assignment& a = assignments[*k];
    if (in.jobs[*k].ranks == a.ranks) continue;  // already running at that count
    total -= a.ranks;
    a.ranks = 0;
    a.reason = fmt::format("waits: its {} first ranks do not fit now", first_ranks[in.jobs[*k].id]);
  }
}

}  // namespace dtrain::schedule
