// Presenting simulated schedules: the comparison of policies, the table of one schedule's jobs
// and the JSON of both for tools. A schedule's actions (simulator.h) are the decisions in the
// order a backend would carry them out.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "schedule/job.h"
#include "schedule/job_pricing.h"
#include "schedule/simulator.h"

namespace dtrain::schedule {

// A time on the schedule's clock: "0 s", "42.0 s", "12.5 min", "3.1 h" (perf::format_seconds past 0).
std::string format_clock(double seconds);

// "1 rank", "4 ranks".
std::string rank_count(int ranks);

// One row per policy: mean JCT, makespan, utilisation, rank-hours in probe runs and paying
// preemptions, preemptions.
std::string format_comparison(const std::vector<ScheduleResult>& results);

// One row per job: its model, ranks, submit, start, end, JCT, preemptions, mean ranks while it
// ran, and the model's time for it alone at its requested ranks (beside a Tiresias trace's own
// duration where given).
std::string format_jobs(const ScheduleResult& r, const std::vector<Job>& jobs, const PriceTable& prices);

// {"policy", "mean_jct_s", "makespan_s", "utilisation", "preemptions", "probe_rank_s",
//  "overhead_rank_s", "jobs": [{"name", "submit_s", "start_s", "end_s", "jct_s", "preemptions",
//  "segments": [{"start_s", "end_s", "ranks", "overhead_s", "probe"}]}],
//  "actions": [{"time_s", "job", "ranks", "previous", "probe", "reason"}]}
nlohmann::json schedule_json(const ScheduleResult& r, const std::vector<Job>& jobs);

}  // namespace dtrain::schedule
