#include "schedule/schedule_report.h"

#include <fmt/format.h>

#include "perfmodel/report.h"

namespace dtrain::schedule {

std::string format_clock(double seconds) { return seconds == 0 ? "0 s" : perf::format_seconds(seconds); }

std::string rank_count(int ranks) { return fmt::format("{} rank{}", ranks, ranks == 1 ? "" : "s"); }

std::string format_comparison(const std::vector<ScheduleResult>& results) {
  std::string s = fmt::format("{:<10} {:>10} {:>10} {:>12} {:>14} {:>17} {:>12}\n", "policy", "mean JCT", "makespan",
                              "utilisation", "probe rank-h", "preempt. rank-h", "preemptions");
  for (const ScheduleResult& r : results) {
    s += fmt::format("{:<10} {:>10} {:>10} {:>11.1f}% {:>14.2f} {:>17.2f} {:>12}\n", r.policy,
                     perf::format_seconds(r.mean_jct), perf::format_seconds(r.makespan), 100 * r.utilisation,
                     r.probe_rank_seconds / 3600, r.overhead_rank_seconds / 3600, r.preemptions);
  }
  return s;
}

std::string format_jobs(const ScheduleResult& r, const std::vector<Job>& jobs, const PriceTable& prices) {
  bool traced = false;
  for (const Job& j : jobs) traced = traced || j.trace_duration >= 0;
  std::string s = fmt::format("jobs under {}:\n{:<12} {:<9} {:>6} {:>9} {:>9} {:>9} {:>9} {:>8} {:>10} {:>12}{}\n",
                              r.policy, "job", "model", "ranks", "submit", "start", "end", "JCT", "preempt",
                              "mean ranks", "alone (req)", traced ? "  trace duration" : "");
  for (std::size_t i = 0; i < jobs.size(); ++i) {
    const Job& j = jobs[i];
    const JobOutcome& o = r.jobs[i];
    double held = 0;
    for (const Segment& g : o.segments) held += g.end - g.start;
    const std::string ranks =
        j.min_ranks == j.max_ranks ? fmt::format("{}", j.max_ranks) : fmt::format("{}-{}", j.min_ranks, j.max_ranks);
    s += fmt::format("{:<12} {:<9} {:>6} {:>9} {:>9} {:>9} {:>9} {:>8} {:>10.1f} {:>12}", j.name, j.model, ranks,
                     format_clock(o.submit), format_clock(o.start), format_clock(o.end), perf::format_seconds(o.jct()),
                     o.preemptions, held > 0 ? o.rank_seconds / held : 0.0,
                     perf::format_seconds(prices.jobs[i].seconds(j.max_ranks)));
    if (traced) s += fmt::format("  {:>14}", j.trace_duration >= 0 ? perf::format_seconds(j.trace_duration) : "-");
    s += "\n";
  }
  return s;
}

nlohmann::json schedule_json(const ScheduleResult& r, const std::vector<Job>& jobs) {
  nlohmann::json out{{"policy", r.policy},
                     {"capacity", r.capacity},
                     {"mean_jct_s", r.mean_jct},
                     {"makespan_s", r.makespan},
                     {"utilisation", r.utilisation},
                     {"preemptions", r.preemptions},
                     {"probe_rank_s", r.probe_rank_seconds},
                     {"overhead_rank_s", r.overhead_rank_seconds}};
  nlohmann::json js = nlohmann::json::array();
  for (std::size_t i = 0; i < jobs.size(); ++i) {
    const JobOutcome& o = r.jobs[i];
    nlohmann::json segments = nlohmann::json::array();
    for (const Segment& g : o.segments) {
      segments.push_back(
          {{"start_s", g.start}, {"end_s", g.end}, {"ranks", g.ranks}, {"overhead_s", g.overhead}, {"probe", g.probe}});
    }
    js.push_back({{"name", jobs[i].name},
                  {"submit_s", o.submit},
                  {"start_s", o.start},
                  {"end_s", o.end},
                  {"jct_s", o.jct()},
                  {"preemptions", o.preemptions},
                  {"segments", segments}});
  }
  out["jobs"] = js;
  nlohmann::json actions = nlohmann::json::array();
  for (const Action& a : r.actions) {
    actions.push_back({{"time_s", a.time},
                       {"job", jobs[a.job].name},
                       {"ranks", a.ranks},
                       {"previous", a.previous},
                       {"probe", a.probe},
                       {"reason", a.reason}});
  }
  out["actions"] = actions;
  return out;
}

}  // namespace dtrain::schedule
