// Timelines in the Chrome trace event format (the JSON that chrome://tracing and Perfetto open):
// one complete event ("ph": "X") per span, a process per rank (pid = rank) and a thread per lane
// (tid: 1 compute, 2 communication, 3 data loader), with metadata events naming both. A measured
// run (`dtrain train --trace`, trace_recorder.h) and a prediction (`dtrain predict --trace`) are
// written in the same form, so the two files can be opened side by side or merged.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace dtrain {

enum class TraceLane : int { kCompute = 1, kComm = 2, kLoader = 3, kSchedule = 4 };
const char* lane_name(TraceLane lane);

struct TraceEvent {
  std::string name;      // layer path, "bucket 3", "update", ...
  std::string category;  // forward, backward, allreduce, update, data, wait
  int rank = 0;
  TraceLane lane = TraceLane::kCompute;
  double start = 0, duration = 0;  // seconds from the trace's origin
  nlohmann::json args = nlohmann::json::object();
};

// {"traceEvents": [...], "displayTimeUnit": "ms", "otherData": {...}}, times in microseconds.
// `process_label` names each rank's process ("rank 0", or "predicted rank 0").
nlohmann::json chrome_trace(const std::vector<TraceEvent>& events, const std::string& process_label,
                            const nlohmann::json& other_data = nlohmann::json::object());
// Writes it; throws InputError naming the file when it cannot be written.
void write_chrome_trace(const std::string& path, const nlohmann::json& trace);

}  // namespace dtrain
