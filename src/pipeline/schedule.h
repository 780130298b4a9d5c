// Pipeline schedules as per-stage action lists, computed before the step (the form of PyTorch's
// pipeline_order): easy to test, to execute and to price with the same list.
//
// K stages, m micro-batches. Stage s runs its list in order; a receive waits for its peer's send,
// every send is non-blocking (its buffer is kept until the step ends), so a list is deadlock-free
// exactly when the stages' lists, run against each other, never wait in a cycle:
// simulate_pipeline (perfmodel/pipeline_time.h) checks that for every (K, m) in the tests.
//
// GPipe (fill-drain, Huang et al. 2019): every stage runs the m forwards, then the m backwards
// in the same order. A stage holds all m micro-batches' activations at the turn.
// 1F1B (PipeDream-Flush, Narayanan et al. 2021): stage s runs min(K - s - 1, m) forwards, then
// alternates one forward and one backward, then drains the backwards. A stage holds at most
// K - s micro-batches' activations; the bubble is the same as GPipe's:
//   step = (m + K - 1)(t_f + t_b) for balanced stages, a fraction (K - 1)/(m + K - 1) of it idle.
// Both accept any m >= 1 (m < K included: 1F1B then degenerates to fill-drain on early stages).
#pragma once

#include <string>
#include <vector>

namespace dtrain::pipeline {

enum class ScheduleKind { kGPipe, kOneFOneB };

// "gpipe" or "1f1b"; InputError listing both for anything else.
ScheduleKind parse_schedule(const std::string& name);
std::string schedule_name(ScheduleKind kind);

enum class ActionKind {
  kRecvActivation,  // from stage s - 1: the micro-batch's input of this stage
  kForward,
  kSendActivation,  // to stage s + 1
  kRecvGradient,    // from stage s + 1: the gradient of this stage's output
  kBackward,
  kSendGradient,  // to stage s - 1: the gradient of this stage's input
};

struct Action {
  ActionKind kind;
  int micro_batch;
  bool operator==(const Action&) const = default;
};

// Stage `stage`'s actions for one step. The first stage neither receives activations nor sends
// gradients; the last neither sends activations nor receives gradients (its backward starts
// from the loss). InputError for stages < 1, stage outside [0, stages) or micro_batches < 1.
std::vector<Action> stage_actions(ScheduleKind kind, int stages, int stage, int micro_batches);
// Every stage's list, stage 0 first.
std::vector<std::vector<Action>> pipeline_actions(ScheduleKind kind, int stages, int micro_batches);

// The most micro-batches whose activations a stage keeps at once (forwarded, not yet backward):
// K - s for 1F1B (at most m), m for GPipe.
int peak_in_flight(const std::vector<Action>& actions);

// "F0 F1 B0 F2 B1 B2": the compute actions only, for logs and traces.
std::string describe(const std::vector<Action>& actions);

}  // namespace dtrain::pipeline
