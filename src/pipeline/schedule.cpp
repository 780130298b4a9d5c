#include "pipeline/schedule.h"

#include <fmt/format.h>

#include <algorithm>

#include "core/error.h"

namespace dtrain::pipeline {

ScheduleKind parse_schedule(const std::string& name) {
  if (name == "gpipe") return ScheduleKind::kGPipe;
  if (name == "1f1b") return ScheduleKind::kOneFOneB;
  throw InputError(fmt::format("unknown pipeline schedule '{}': use gpipe (fill-drain) or 1f1b", name));
}

std::string schedule_name(ScheduleKind kind) { return kind == ScheduleKind::kGPipe ? "gpipe" : "1f1b"; }

namespace {

void add_forward(std::vector<Action>& out, bool first, bool last, int i) {
  if (!first) out.push_back({ActionKind::kRecvActivation, i});
  out.push_back({ActionKind::kForward, i});
  if (!last) out.push_back({ActionKind::kSendActivation, i});
}

void add_backward(std::vector<Action>& out, bool first, bool last, int i) {
  if (!last) out.push_back({ActionKind::kRecvGradient, i});
  out.push_back({ActionKind::kBackward, i});
  if (!first) out.push_back({ActionKind::kSendGradient, i});
}

}  // namespace

std::vector<Action> stage_actions(ScheduleKind kind, int stages, int stage, int micro_batches) {
  if (stages < 1) throw InputError(fmt::format("a pipeline needs at least 1 stage, got {}", stages));
  if (stage < 0 || stage >= stages)
    throw InputError(fmt::format("pipeline stage {} is outside [0, {}) of a {}-stage pipeline", stage, stages, stages));
  if (micro_batches < 1) throw InputError(fmt::format("--micro-batches must be at least 1, got {}", micro_batches));
  const bool first = stage == 0, last = stage == stages - 1;
  std::vector<Action> out;
  if (kind == ScheduleKind::kGPipe) {
    for (int i = 0; i < micro_batches; ++i) add_forward(out, first, last, i);
    for (int i = 0; i < micro_batches; ++i) add_backward(out, first, last, i);
    return out;
  }
  // 1F1B: the warm-up forwards fill the stages after this one, so that the first backward
  // arrives just as the next forward would start.
  const int warmup = std::min(stages - stage - 1, micro_batches);
  int next_forward = 0, next_backward = 0;
  for (; next_forward < warmup; ++next_forward) add_forward(out, first, last, next_forward);
  while (next_forward < micro_batches) {
    add_forward(out, first, last, next_forward++);
    add_backward(out, first, last, next_backward++);
  }
  while (next_backward < micro_batches) add_backward(out, first, last, next_backward++);
  return out;
}

std::vector<std::vector<Action>> pipeline_actions(ScheduleKind kind, int stages, int micro_batches) {
  std::vector<std::vector<Action>> out;
  for (int s = 0; s < stages; ++s) out.push_back(stage_actions(kind, stages, s, micro_batches));
  return out;
}

int peak_in_flight(const std::vector<Action>& actions) {
  int held = 0, peak = 0;
  for (const Action& a : actions) {
    if (a.kind == ActionKind::kForward) peak = std::max(peak, ++held);
    if (a.kind == ActionKind::kBackward) --held;
  }
  return peak;
}

std::string describe(const std::vector<Action>& actions) {
  std::string out;
  for (const Action& a : actions) {
    if (a.kind != ActionKind::kForward && a.kind != ActionKind::kBackward) continue;
    if (!out.empty()) out += ' ';
    out += fmt::format("{}{}", a.kind == ActionKind::kForward ? 'F' : 'B', a.micro_batch);
  }
  return out;
}

}  // namespace dtrain::pipeline
