#include "schedule/explain_decision.h"

#include <fmt/format.h>

#include <array>

#include "perfmodel/report.h"
#include "schedule/schedule_report.h"

namespace dtrain::schedule {
namespace {

// "first", "second", ..., "tenth", then "11th", "22nd", ...
std::string ordinal(int n) {
  static const std::array<const char*, 10> words{"first", "second",  "third",  "fourth", "fifth",
                                                 "sixth", "seventh", "eighth", "ninth",  "tenth"};
  if (n >= 1 && n <= 10) return words[static_cast<std::size_t>(n - 1)];
  const int tens = n % 100, last = n % 10;
  const char* suffix = (tens >= 11 && tens <= 13) ? "th"
                       : last == 1                ? "st"
                       : last == 2                ? "nd"
                       : last == 3                ? "rd"
                                                  : "th";
  return fmt::format("{}{}", n, suffix);
}

std::string seconds_text(double s) { return format_clock(s); }

}  // namespace

std::string marginal_terms(const JobPrice& price, double remaining, int ranks) {
  const RankPrice& now = price.at(ranks);
  const RankPrice& more = price.at(ranks + 1);
  const double before = remaining * now.seconds, after = remaining * more.seconds;
  const double saved = before > 0 ? (before - after) / before : 0;
  std::string s =
      fmt::format("the {} would {} {:.0f}% (remaining {} -> {})", ordinal(ranks + 1), saved >= 0 ? "save" : "cost",
                  100 * std::abs(saved), seconds_text(before), seconds_text(after));
  const double compute_before = remaining * now.steps * now.compute,
               compute_after = remaining * more.steps * more.compute;
  const double other_before = remaining * now.steps * now.other, other_after = remaining * more.steps * more.other;
  s += fmt::format(": compute {} from {} to {} ({:.0f} -> {:.0f} steps of {})",
                   compute_after <= compute_before ? "falls" : "grows", seconds_text(compute_before),
                   seconds_text(compute_after), remaining * now.steps, remaining * more.steps,
                   seconds_text(now.compute));
  if (now.other > 0 || more.other > 0) {
    s += fmt::format(" while communication and waits {} from {} to {} (per step {} -> {}; {})",
                     other_after >= other_before ? "grow" : "fall", seconds_text(other_before),
                     seconds_text(other_after), seconds_text(now.other), seconds_text(more.other), more.exchange);
  }
  return s;
}

std::string explain_action(const Action& a, const Job& job, const JobPrice& price) {
  std::string s = fmt::format("t={}: job {} ", format_clock(a.time), job.name);
  if (a.ranks == 0) return s + fmt::format("stops (held {}): {}", rank_count(a.previous), a.reason);
  s += fmt::format("{} {} (was {})", a.probe ? "probes at" : "gets", rank_count(a.ranks), a.previous);
  if (a.ranks < price.max_ranks) {
    s += fmt::format(", not {}: {}", a.ranks + 1, marginal_terms(price, a.remaining, a.ranks));
  } else {
    s += fmt::format(", its most: {} left at {}", seconds_text(a.remaining * price.seconds(a.ranks)),
                     rank_count(a.ranks));
  }
  return s + "; " + a.reason;
}

std::string explain_schedule(const ScheduleResult& r, const std::vector<Job>& jobs, const PriceTable& prices) {
  std::string s = fmt::format("decisions of {} ({} changes of ranks):\n", r.policy, r.actions.size());
  for (const Action& a : r.actions) s += "  " + explain_action(a, jobs[a.job], prices.jobs[a.job]) + "\n";
  return s;
}

}  // namespace dtrain::schedule
