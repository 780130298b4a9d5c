// Greedy allocation by marginal gain (Optimus, Peng et al., EuroSys 2018, section 4.2): every
// admitted job gets its minimum ranks, then each remaining rank goes to the job whose remaining
// time drops most from one more rank, until the ranks run out or no rank saves time. The optimus
// and model policies share it; they differ in the remaining-time curves they give it (a fitted
// curve after probe runs, or the model's prices).
//
// Admission, when not every job's minimum fits: the jobs in order of least remaining time (at
// their fastest rank count), where a running job's is lowered by its preemption cost, so a
// waiting job displaces a running one only if it is shorter by more than what the preemption
// costs (exchanging them saves the longer job's time minus the shorter's, and costs the restart).
//
// Against thrashing, a running job keeps its ranks when admitted: it moves to fewer only when the
// jobs before it leave fewer ranks than it holds or when fewer ranks save it more than its
// preemption costs (its time grows past them), and it grows only by steps whose saving exceeds
// its preemption cost (a running job's first added ranks count the cost once, spread over the
// step's ranks).
#pragma once

#include <string>
#include <vector>

namespace dtrain::schedule {

struct MarginalJob {
  std::string name;
  int min_ranks = 1, max_ranks = 1;
  int current = 0;                // ranks held now; 0: waiting
  double restart = 0;             // seconds a running job loses when its ranks change
  std::vector<double> remaining;  // remaining seconds at min_ranks + i ranks
  double at(int ranks) const { return remaining[static_cast<std::size_t>(ranks - min_ranks)]; }
};

struct MarginalDecision {
  std::vector<int> ranks;            // per job, 0: not running
  std::vector<std::string> reasons;  // per job: why this many and not one more
};

// knee > 0: smallest remaining service first. The admission order is by remaining service,
// ranks x remaining time (at the count needing the fewest rank-seconds; a running job's lowered by
// its preemption on its ranks), the two dimensions Tiresias ranks jobs by (here known from the
// prices instead of attained), and each job takes, before the next is admitted, ranks up to its
// knee: while one more rank still saves at least `knee` of what it would under a linear speedup,
// R(w) - R(w+1) >= knee x R(w) / (w + 1). With linear speedups every job in turn takes its most
// ranks: the shortest-remaining-work-first rule that minimises the mean completion time on one
// machine (Schrage 1968); a poor speedup stops a job at its knee and leaves the ranks to the next.
// What is left goes by marginal gain as above.
// knee = 0: Optimus's rule (admission by remaining time, every admitted job from its minimum).
MarginalDecision allocate_by_marginal_gain(const std::vector<MarginalJob>& jobs, int capacity, double knee = 0);

}  // namespace dtrain::schedule
