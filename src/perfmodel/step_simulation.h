// Consecutive data-parallel steps of one worker, simulated event by event on its two threads as
// parallel/data_parallel.h runs them:
//   compute thread   the step's items in order (each layer's forward and backward of every
//                    micro-batch, with the gradient copies of the last backward), then it waits
//                    for this step's buckets (double buffering: the previous step's) and updates;
//   comm thread      the buckets in FIFO order, each from the moment the compute item that
//                    released it ended (comm_worker.h).
// Work is given in seconds at full speed. While both threads are busy they share the host (the
// comm thread polls its transport, parallel/comm_worker.h and comm/mpi): compute then advances at
// `compute_share` of its speed and communication at `comm_share` (the profile's node.overlap,
// measured by dtrain calibrate; 1 when absent). A waiting thread costs nothing: the compute thread
// blocks on a condition variable, an idle comm thread too. With both shares 1 this is the plain
// max-plus timeline (a bucket starts at max(ready, previous bucket's end)).
// Steps repeat until the period settles: the comm thread can carry work into the next step.
// A link with a burst allowance (profile.h: LinkProfile::burst, a token bucket of `burst` seconds
// of link time) refills it while the comm thread has no bucket, one second per second, and a
// bucket that starts spends what it holds on its network transfer (`bucket_burstable`): those
// bytes pass at once. Full at the start; the steps repeat until the refills settle too.
#pragma once

#include <cstddef>
#include <vector>

namespace dtrain::perf {

struct SimItem {
  double seconds = 0;                 // at full speed
  std::vector<std::size_t> releases;  // buckets handed to the comm thread when it ends
};

struct SimInput {
  std::vector<SimItem> items;     // forward and backward of one step, in order
  std::size_t forward_items = 0;  // items[0 .. forward_items) are the last forward (and earlier micro-batches)
  std::vector<double> bucket_seconds;
  std::vector<double> bucket_burstable;  // per bucket, seconds a burst can remove (empty: none)
  double burst = 0;                      // seconds of link time the full burst allowance passes
  double update = 0;
  bool double_buffering = false;
  double compute_share = 1, comm_share = 1;
  int steps = 8;
};

// The last simulated step, times from its start (the previous step's end).
struct SimStep {
  double period = 0;  // seconds per step in the steady state
  std::vector<double> item_start, item_end;
  std::vector<double> bucket_ready, bucket_start, bucket_end;  // this step's buckets
  double forward_end = 0, backward_end = 0, update_start = 0, update_end = 0;
};

SimStep simulate_steps(const SimInput& input);

}  // namespace dtrain::perf
