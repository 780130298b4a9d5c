#include "calibration/pinned_pairs.h"

#include <pthread.h>

#include <cstddef>

#include "core/core_round_trip.h"

namespace dtrain::perf {

int pair_cpu(int ranks, int pair, const std::vector<int>& allowed) {
  const auto cpus = static_cast<int>(allowed.size());
  if (cpus <= 1 || ranks <= cpus || pair < 0) return -1;
  return allowed[static_cast<std::size_t>(pair % cpus)];
}

PinnedPairs::PinnedPairs(const std::vector<std::vector<int>>& members, int rank) {
  for (const std::vector<int>& host : members) {
    for (std::size_t i = 0; i < host.size(); ++i) {
      // Consecutive members pair up; an odd one out has no partner.
      if (host[i] != rank || (i + 1 == host.size() && i % 2 == 0)) continue;
      cpu_ = pair_cpu(static_cast<int>(host.size()), static_cast<int>(i / 2), allowed_cpus());
    }
  }
  // The thread's own CPUs, to give back when the timing is done.
  pinned_ = cpu_ >= 0 && pthread_getaffinity_np(pthread_self(), sizeof saved_, &saved_) == 0 && pin_this_thread(cpu_);
  if (!pinned_) cpu_ = -1;
}

PinnedPairs::~PinnedPairs() {
  if (pinned_) pthread_setaffinity_np(pthread_self(), sizeof saved_, &saved_);
}

}  // namespace dtrain::perf
