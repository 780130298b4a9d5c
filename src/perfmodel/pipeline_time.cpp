#include "perfmodel/pipeline_time.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <numeric>
#include <tuple>

#include "core/error.h"

namespace dtrain::perf {

using pipeline::Action;
using pipeline::ActionKind;

double PipelineTiming::bubble_fraction() const {
  if (idle_s.empty() || step_s <= 0) return 0;
  return std::accumulate(idle_s.begin(), idle_s.end(), 0.0) / (step_s * static_cast<double>(idle_s.size()));
}

namespace {

// A message in flight: (receiving stage, is gradient, micro-batch) -> arrival time.
using MessageKey = std::tuple<int, bool, int>;

}  // namespace

PipelineTiming simulate_pipeline(const std::vector<std::vector<Action>>& lists, const std::vector<StageTime>& stages,
                                 const std::vector<double>& transfer_s) {
  const int k = static_cast<int>(lists.size());
  DT_CHECK(static_cast<int>(stages.size()) == k, "{} stage times for {} stages", stages.size(), k);
  DT_CHECK(static_cast<int>(transfer_s.size()) == std::max(k - 1, 0), "{} transfer times for {} stages",
           transfer_s.size(), k);
  PipelineTiming out;
  out.busy_s.assign(k, 0);
  out.spans.resize(k);
  std::vector<double> clock(k, 0);
  std::vector<std::size_t> next(k, 0);
  std::map<MessageKey, double> arrivals;
  std::size_t remaining = 0;
  for (const auto& l : lists) remaining += l.size();
  while (remaining > 0) {
    bool progressed = false;
    for (int s = 0; s < k; ++s) {
      // Run stage s until it must wait for a message that has not been sent yet.
      while (next[s] < lists[s].size()) {
        const Action& a = lists[s][next[s]];
        double start = clock[s], end = clock[s];
        bool waiting = false;
        switch (a.kind) {
          case ActionKind::kForward:
            end = start + stages[s].forward_s;
            out.busy_s[s] += stages[s].forward_s;
            break;
          case ActionKind::kBackward:
            end = start + stages[s].backward_s;
            out.busy_s[s] += stages[s].backward_s;
            break;
          case ActionKind::kSendActivation:
            DT_CHECK(s + 1 < k, "stage {} sends an activation past the last stage", s);
            arrivals[{s + 1, false, a.micro_batch}] = start + transfer_s[s];
            break;
          case ActionKind::kSendGradient:
            DT_CHECK(s > 0, "stage 0 sends a gradient before the first stage");
            arrivals[{s - 1, true, a.micro_batch}] = start + transfer_s[s - 1];
            break;
          case ActionKind::kRecvActivation:
          case ActionKind::kRecvGradient: {
            auto it = arrivals.find({s, a.kind == ActionKind::kRecvGradient, a.micro_batch});
            if (it == arrivals.end()) {
              waiting = true;
              break;
            }
            end = std::max(start, it->second);
            arrivals.erase(it);
            break;
          }
        }
        if (waiting) break;
        out.spans[s].push_back({a, start, end});
        clock[s] = end;
        ++next[s];
        --remaining;
        progressed = true;
      }
    }
    if (!progressed) {
      std::string waits;
      for (int s = 0; s < k; ++s)
        if (next[s] < lists[s].size())
          waits += fmt::format(" stage {} receiving {} {};", s,
                               lists[s][next[s]].kind == ActionKind::kRecvGradient ? "the gradient of" : "micro-batch",
                               lists[s][next[s]].micro_batch);
      throw InternalError("pipeline schedule deadlocks: every stage waits for a message never sent:" + waits);
    }
  }
  DT_CHECK(arrivals.empty(), "{} messages sent and never received", arrivals.size());
  out.step_s = k > 0 ? *std::max_element(clock.begin(), clock.end()) : 0;
  for (int s = 0; s < k; ++s) out.idle_s.push_back(out.step_s - out.busy_s[s]);
  return out;
}

PipelineTiming simulate_pipeline(pipeline::ScheduleKind kind, int micro_batches, const std::vector<StageTime>& stages,
                                 const std::vector<double>& transfer_s) {
  return simulate_pipeline(pipeline::pipeline_actions(kind, static_cast<int>(stages.size()), micro_batches), stages,
                           transfer_s);
}

}  // namespace dtrain::perf
