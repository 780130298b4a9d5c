#include "core/trace_format.h"

#include <fmt/format.h>

#include <fstream>
#include <set>

#include "core/error.h"

namespace dtrain {

const char* lane_name(TraceLane lane) {
  switch (lane) {
    case TraceLane::kCompute:
      return "compute";
    case TraceLane::kComm:
      return "communication";
    case TraceLane::kLoader:
      return "data loader";
    case TraceLane::kSchedule:
      return "pipeline schedule";
  }
  return "?";
}

nlohmann::json chrome_trace(const std::vector<TraceEvent>& events, const std::string& process_label,
                            const nlohmann::json& other_data) {
  nlohmann::json out = nlohmann::json::array();
  std::set<std::pair<int, int>> threads;
  std::set<int> ranks;
  for (const TraceEvent& e : events) {
    const int tid = static_cast<int>(e.lane);
    out.push_back({{"name", e.name},
                   {"cat", e.category},
                   {"ph", "X"},
                   {"ts", e.start * 1e6},
                   {"dur", e.duration * 1e6},
                   {"pid", e.rank},
                   {"tid", tid},
                   {"args", e.args}});
    threads.emplace(e.rank, tid);
    ranks.insert(e.rank);
  }
  for (int r : ranks) {
    out.push_back({{"name", "process_name"},
                   {"ph", "M"},
                   {"pid", r},
                   {"args", {{"name", fmt::format("{} {}", process_label, r)}}}});
    out.push_back({{"name", "process_sort_index"}, {"ph", "M"}, {"pid", r}, {"args", {{"sort_index", r}}}});
  }
  for (const auto& [pid, tid] : threads) {
    out.push_back({{"name", "thread_name"},
                   {"ph", "M"},
                   {"pid", pid},
                   {"tid", tid},
                   {"args", {{"name", lane_name(static_cast<TraceLane>(tid))}}}});
  }
  return {{"traceEvents", out}, {"displayTimeUnit", "ms"}, {"otherData", other_data}};
}

void write_chrome_trace(const std::string& path, const nlohmann::json& trace) {
  std::ofstream f(path);
  if (!f) throw InputError(fmt::format("cannot write the trace '{}' (--trace): check the folder exists", path));
  f << trace.dump() << '\n';
  if (!f) throw DataError(fmt::format("writing the trace '{}' failed (disk full?)", path));
}

}  // namespace dtrain
