// The time of one pipeline step, by running the stages' action lists (pipeline/schedule.h)
// against each other on a clock: the same lists the executor runs, so the model and the code
// agree by construction, and unbalanced stages are priced by what the schedule really waits for.
//
// Per micro-batch, stage s computes its forward in f_s and its backward in b_s; a message between
// stages s and s + 1 (an activation forward, its gradient back: the same bytes) arrives t_s after
// its send is posted; posting a send costs the sender nothing (the executor's sends are
// non-blocking). A receive ends at max(now, arrival). For K balanced stages GPipe takes
//   step = (m + K - 1)(f + b) + 2 (K - 1) t,
// each stage idle (K - 1)(f + b) + 2 (K - 1) t of it: the bubble, a fraction (K - 1)/(m + K - 1)
// of the step when t = 0 (Huang et al. 2019; Narayanan et al. 2021 write the same bubble as
// (K - 1)/m of the ideal time m(f + b)). 1F1B takes the same when t = 0; with t > 0 its steady
// state also waits on gradients' round trips, up to 2t more per micro-batch, which the clock
// counts and the formula does not.
#pragma once

#include <vector>

#include "pipeline/schedule.h"

namespace dtrain::perf {

struct StageTime {
  double forward_s = 0;   // one micro-batch's forward on this stage
  double backward_s = 0;  // and its backward
};

// One action as the clock ran it.
struct ActionSpan {
  pipeline::Action action{};
  double start_s = 0, end_s = 0;
};

struct PipelineTiming {
  double step_s = 0;
  std::vector<double> busy_s;                  // per stage: forward and backward compute
  std::vector<double> idle_s;                  // per stage: step_s - busy_s (waiting on receives and at the ends)
  std::vector<std::vector<ActionSpan>> spans;  // per stage, in list order
  // The mean over stages of idle_s / step_s.
  double bubble_fraction() const;
};

// `transfer_s[s]` is the time of one message across the boundary after stage s (K - 1 entries).
// InternalError naming the stages and actions when the lists wait on each other in a cycle (a
// schedule that would deadlock) or a receive has no matching send.
PipelineTiming simulate_pipeline(const std::vector<std::vector<pipeline::Action>>& stage_lists,
                                 const std::vector<StageTime>& stages, const std::vector<double>& transfer_s);

// The same for a named schedule with m micro-batches.
PipelineTiming simulate_pipeline(pipeline::ScheduleKind kind, int micro_batches, const std::vector<StageTime>& stages,
                                 const std::vector<double>& transfer_s);

}  // namespace dtrain::perf
