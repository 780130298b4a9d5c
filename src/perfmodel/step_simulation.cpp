#include "perfmodel/step_simulation.h"

#include <algorithm>
#include <deque>
#include <limits>

#include "core/error.h"

namespace dtrain::perf {
namespace {

struct Job {
  int step = 0;
  std::size_t bucket = 0;
  double remaining = 0;
};

enum class Phase { kItems, kWait, kUpdate };

}  // namespace

SimStep simulate_steps(const SimInput& in) {
  DT_CHECK(in.steps >= 3, "simulate at least 3 steps, got {}", in.steps);
  DT_CHECK(in.compute_share > 0 && in.compute_share <= 1 && in.comm_share > 0 && in.comm_share <= 1, "shares {} {}",
           in.compute_share, in.comm_share);
  const std::size_t n = in.items.size(), buckets = in.bucket_seconds.size();
  const int recorded = in.steps - 2;  // the step after it finishes the recorded step's buckets
  SimStep out;
  out.item_start.assign(n, 0);
  out.item_end.assign(n, 0);
  out.bucket_ready.assign(buckets, 0);
  out.bucket_start.assign(buckets, 0);
  out.bucket_end.assign(buckets, 0);

  std::vector<std::size_t> finished(static_cast<std::size_t>(in.steps), 0);  // buckets done per step
  std::vector<double> step_end(static_cast<std::size_t>(in.steps), 0);
  std::deque<Job> queue;
  double t = 0, left = 0;
  double tokens = in.burst;   // seconds of link time the burst allowance holds now
  double recorded_start = 0;  // times of the recorded step are kept from its start
  int step = 0;
  std::size_t item = 0;
  Phase phase = Phase::kItems;
  bool item_started = false;
  auto rel = [&](double x) { return x - recorded_start; };
  auto start_job = [&] {
    if (queue.empty()) return;
    Job& j = queue.front();
    if (j.bucket < in.bucket_burstable.size()) {
      const double spent = std::min(tokens, std::min(in.bucket_burstable[j.bucket], j.remaining));
      j.remaining -= spent;
      tokens -= spent;
    }
    if (j.step == recorded) out.bucket_start[j.bucket] = rel(t);
  };

  while (step < in.steps) {
    // Zero-time transitions of the compute thread.
    for (bool moved = true; moved && step < in.steps;) {
      moved = false;
      if (phase == Phase::kItems) {
        if (item < n && !item_started) {
          left = in.items[item].seconds;
          item_started = true;
          if (step == recorded) out.item_start[item] = rel(t);
        }
        if (item < n && left <= 0) {
          if (step == recorded) out.item_end[item] = rel(t);
          for (std::size_t b : in.items[item].releases) {
            queue.push_back({step, b, in.bucket_seconds[b]});
            if (step == recorded) out.bucket_ready[b] = rel(t);
            if (queue.size() == 1) start_job();
          }
          ++item;
          item_started = false;
          moved = true;
        } else if (item == n) {
          if (step == recorded) {
            out.forward_end = in.forward_items > 0 ? out.item_end[in.forward_items - 1] : 0;
            out.backward_end = rel(t);
          }
          phase = Phase::kWait;
          moved = true;
        }
      } else if (phase == Phase::kWait) {
        const int waits_for = in.double_buffering ? step - 1 : step;
        if (waits_for < 0 || finished[static_cast<std::size_t>(waits_for)] == buckets) {
          if (step == recorded) out.update_start = rel(t);
          left = in.double_buffering && step == 0 ? 0 : in.update;  // the first step only communicates
          phase = Phase::kUpdate;
          moved = true;
        }
      } else if (left <= 0) {
        if (step == recorded) out.update_end = rel(t);
        step_end[static_cast<std::size_t>(step)] = t;
        ++step;
        if (step == recorded) recorded_start = t;
        item = 0;
        item_started = false;
        phase = Phase::kItems;
        moved = true;
      }
    }
    if (step >= in.steps) break;
    const bool computing = phase != Phase::kWait;
    const bool communicating = !queue.empty();
    DT_CHECK(computing || communicating, "the simulated step deadlocked at step {}", step);
    const double rc = communicating ? in.compute_share : 1.0;
    const double rm = computing ? in.comm_share : 1.0;
    const double inf = std::numeric_limits<double>::infinity();
    const double to_compute = computing ? left / rc : inf;
    const double to_comm = communicating ? queue.front().remaining / rm : inf;
    const double dt = std::min(to_compute, to_comm);
    t += dt;
    if (!communicating) tokens = std::min(in.burst, tokens + dt);
    if (computing) left = to_compute <= to_comm ? 0 : left - dt * rc;
    if (communicating) {
      Job& j = queue.front();
      j.remaining = to_comm <= to_compute ? 0 : j.remaining - dt * rm;
      if (j.remaining <= 0) {
        if (j.step == recorded) out.bucket_end[j.bucket] = rel(t);
        ++finished[static_cast<std::size_t>(j.step)];
        queue.pop_front();
        start_job();
      }
    }
  }
  out.period = step_end[static_cast<std::size_t>(recorded)] - step_end[static_cast<std::size_t>(recorded - 1)];
  return out;
}

}  // namespace dtrain::perf
