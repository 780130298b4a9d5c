// Where a host's ranks outnumber the CPUs they may run on, the kernel decides which ranks share a
// CPU, and an exchange between two ranks costs what their placement makes it: on the 2-core
// development VM with 4 ranks, a pair pinned to one CPU exchanged 1 MiB in 95-106 us, in either
// core state (core_round_trip.h), and a pair pinned to different CPUs in 888-893 us, in either
// state (each of the two waits for the other to be scheduled beside a rank that also wants its
// CPU). Unpinned, the exchange ladder caught whichever placement the kernel had at the moment:
// 95 us in some calibrations and 909-937 us in others minutes apart, a 10x swing in the
// same-host price of every collective. Ranks that exchange wake each other, and the kernel's
// wake-affine placement tends to move a woken rank to its waker's CPU; training steps are priced
// better from the first placement (4-rank mlp steps in the fast core state: 9% off in the median,
// 22% at most; from unpinned ladders up to 101%). In the slow state they take longer than either
// says (docs/perfmodel.md, What remains).
//
// So the same-host link is timed with each pair pinned to a CPU of its own (pair j of a host on
// its j-th allowed CPU, modulo their number) while the ranks outnumber the CPUs, and unpinned
// again afterwards. Where every rank has a CPU (or mpirun bound each rank to one), nothing
// changes.
#pragma once

#include <sched.h>

#include <vector>

namespace dtrain::perf {

class PinnedPairs {
 public:
  // `members`: the ranks of each host (comm::HostLayout); pairs are consecutive members, as the
  // calibration pairs them. Pins the calling thread when its host's ranks outnumber the CPUs this
  // process may run on (and those are more than one) and it has a partner.
  PinnedPairs(const std::vector<std::vector<int>>& members, int rank);
  ~PinnedPairs();
  PinnedPairs(const PinnedPairs&) = delete;
  PinnedPairs& operator=(const PinnedPairs&) = delete;

  bool pinned() const { return pinned_; }
  int cpu() const { return cpu_; }

 private:
  cpu_set_t saved_{};
  bool pinned_ = false;
  int cpu_ = -1;
};

// The CPU pair `pair` of a host pins to when `ranks` ranks share the `allowed` CPUs, -1 where
// they do not outnumber them (or there is one CPU only: nothing to choose).
int pair_cpu(int ranks, int pair, const std::vector<int>& allowed);

}  // namespace dtrain::perf
