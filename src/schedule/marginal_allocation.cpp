#include "schedule/marginal_allocation.h"

#include <fmt/format.h>

#include <algorithm>
#include <limits>
#include <numeric>

#include "perfmodel/report.h"
#include "schedule/schedule_report.h"

namespace dtrain::schedule {
namespace {

double least_remaining(const MarginalJob& j) { return *std::min_element(j.remaining.begin(), j.remaining.end()); }

// The rank count in [min_ranks, most] with the least remaining time (ties: the fewest ranks).
int fastest_within(const MarginalJob& j, int most) {
  int best = j.min_ranks;
  for (int w = j.min_ranks + 1; w <= most; ++w) {
    if (j.at(w) < j.at(best)) best = w;
  }
  return best;
}

// The best way to add ranks to job j now holding `ranks` with `left` free: (ranks added, saving
// per added rank). A running job still at its current ranks pays its restart once for the step.
std::pair<int, double> best_growth(const MarginalJob& j, int ranks, int left) {
  const int room = std::min(left, j.max_ranks - ranks);
  if (room <= 0) return {0, 0};
  if (j.current == 0 || ranks != j.current) return {1, j.at(ranks) - j.at(ranks + 1)};
  std::pair<int, double> best{0, 0};
  for (int k = 1; k <= room; ++k) {
    const double per_rank = (j.at(ranks) - j.at(ranks + k) - j.restart) / k;
    if (best.first == 0 || per_rank > best.second) best = {k, per_rank};
  }
  return best;
}

std::string growth_reason(const MarginalJob& j, int ranks, const std::string& last_winner, double last_gain, int left) {
  if (ranks == j.max_ranks) return fmt::format("at its most ranks ({})", j.max_ranks);
  const double save = j.at(ranks) - j.at(ranks + 1);
  if (save <= 0) {
    return fmt::format("one more rank saves no time (remaining {} -> {})", perf::format_seconds(j.at(ranks)),
                       perf::format_seconds(j.at(ranks + 1)));
  }
  if (j.current > 0 && ranks == j.current && left > 0) {
    const int k = std::min(left, j.max_ranks - ranks);
    return fmt::format("growing it by up to {} ranks would save {}, not more than its {} preemption", k,
                       perf::format_seconds(j.at(ranks) - j.at(ranks + k)), perf::format_seconds(j.restart));
  }
  if (last_winner.empty())
    return fmt::format("no rank was free for it (one more would save {})", perf::format_seconds(save));
  return fmt::format("the cluster's ranks ran out: one more would save {}, the last rank saved {} for job {}",
                     perf::format_seconds(save), perf::format_seconds(last_gain), last_winner);
}

// Optimus's rule (knee 0): least remaining time at the job's fastest count, a running job's
// lowered by its preemption. The knee rule: least remaining service, ranks x time, at the count
// that needs the fewest rank-seconds, a running job's lowered by its preemption on its ranks.
double admission_key(const MarginalJob& j, double knee) {
  if (knee <= 0) return least_remaining(j) - (j.current > 0 ? j.restart : 0);
  double service = std::numeric_limits<double>::infinity();
  for (int w = j.min_ranks; w <= j.max_ranks; ++w) service = std::min(service, w * j.at(w));
  return service - (j.current > 0 ? j.restart * j.current : 0);
}

// Why a job took `ranks` in its turn under the knee rule.
std::string knee_reason(const MarginalJob& j, int ranks, int left, double knee) {
  if (ranks == j.max_ranks) return "in its turn took its most ranks; ";
  const double ideal = j.at(ranks) / (ranks + 1), save = j.at(ranks) - j.at(ranks + 1);
  if (ranks == left) return fmt::format("in its turn took the {} free; ", rank_count(ranks));
  if (save >= knee * ideal) {
    return fmt::format("in its turn kept {}: growing would not save more than its {} preemption; ", rank_count(ranks),
                       perf::format_seconds(j.restart));
  }
  return fmt::format(
      "in its turn stopped at {}: one more would save {}, {:.0f}% of a linear speedup's {} (under {:.0f}%); ",
      rank_count(ranks), perf::format_seconds(save), 100 * save / ideal, perf::format_seconds(ideal), 100 * knee);
}

}  // namespace

MarginalDecision allocate_by_marginal_gain(const std::vector<MarginalJob>& jobs, int capacity, double knee) {
  const std::size_t n = jobs.size();
  // The admission order's key, and what it measures for the reasons.
  std::vector<double> key(n);
  for (std::size_t i = 0; i < n; ++i) key[i] = admission_key(jobs[i], knee);
  const char* measure = knee > 0 ? "less remaining service" : "less remaining time";
  std::vector<std::size_t> order(n);
  std::iota(order.begin(), order.end(), std::size_t{0});
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return key[a] < key[b]; });

  MarginalDecision out;
  out.ranks.assign(n, 0);
  out.reasons.assign(n, "");
  std::vector<std::string> admission(n);
  int left = capacity;
  for (std::size_t k = 0; k < n; ++k) {
    const std::size_t i = order[k];
    const MarginalJob& j = jobs[i];
    if (j.current > 0 && std::min(j.current, left) >= j.min_ranks) {
      // A running job keeps its ranks, unless fewer save more than its restart costs (its time
      // grows past them) or the jobs before it left fewer: then its fastest count within them.
      const int cap = std::min(j.current, left);
      const int best = fastest_within(j, cap);
      if (cap < j.current) {
        out.ranks[i] = best;
        admission[i] =
            fmt::format("shrunk from {}: the {} jobs with {} hold the rest; ", rank_count(j.current), k, measure);
      } else if (j.at(j.current) - j.at(best) > j.restart) {
        out.ranks[i] = best;
        admission[i] = fmt::format("moved from {} to its fastest {}, which saves {}, more than its {} preemption; ",
                                   rank_count(j.current), rank_count(best),
                                   perf::format_seconds(j.at(j.current) - j.at(best)), perf::format_seconds(j.restart));
      } else {
        out.ranks[i] = j.current;
      }
    } else if (j.current == 0 && j.min_ranks <= left) {
      out.ranks[i] = j.min_ranks;
    } else {
      out.reasons[i] = fmt::format(
          "{}: needs {}, {} free after the {} jobs with {} ({} left at best{})", j.current > 0 ? "stopped" : "waits",
          rank_count(j.min_ranks), left, k, measure, perf::format_seconds(least_remaining(j)),
          j.current > 0 ? fmt::format(", its preemption of {} counted in its favour", perf::format_seconds(j.restart))
                        : "");
    }
    if (knee > 0 && out.ranks[i] > 0) {
      const int kept = out.ranks[i];
      int w = kept;
      while (w < j.max_ranks && w < left && j.at(w) - j.at(w + 1) >= knee * j.at(w) / (w + 1)) ++w;
      // A running job grows only if the growth saves more than its restart.
      if (j.current > 0 && kept == j.current && j.at(kept) - j.at(w) <= j.restart) w = kept;
      out.ranks[i] = w;
      admission[i] += knee_reason(j, w, left, knee);
    }
    left -= out.ranks[i];
  }

  std::string last_winner;
  double last_gain = 0;
  while (left > 0) {
    std::size_t winner = n;
    std::pair<int, double> best{0, 0};
    for (std::size_t i = 0; i < n; ++i) {
      if (out.ranks[i] == 0) continue;
      const std::pair<int, double> g = best_growth(jobs[i], out.ranks[i], left);
      if (g.first > 0 && g.second > 0 && (winner == n || g.second > best.second)) {
        winner = i;
        best = g;
      }
    }
    if (winner == n) break;
    out.ranks[winner] += best.first;
    left -= best.first;
    last_winner = jobs[winner].name;
    last_gain = best.second;
  }
  for (std::size_t i = 0; i < n; ++i) {
    if (out.ranks[i] == 0) continue;
    out.reasons[i] = admission[i] + growth_reason(jobs[i], out.ranks[i], left > 0 ? "" : last_winner, last_gain, left);
  }
  return out;
}

}  // namespace dtrain::schedule
