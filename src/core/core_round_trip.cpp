#include "core/core_round_trip.h"

#include <pthread.h>
#include <sched.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdint>
#include <limits>
#include <thread>

namespace dtrain {
namespace {

using SteadyClock = std::chrono::steady_clock;

// Round trips per timed batch: long enough to amortise the clock reads (tens of ns), short
// enough that most batches see no preemption.
constexpr int kTripsPerBatch = 64;
// Spins between looks at the clock while waiting for the other core.
constexpr int kSpinsPerClockRead = 1024;
// A round trip this long means the two threads took turns on a core (each turn waits for the
// scheduler) rather than ran at once: cache lines cross between cores in under a microsecond.
constexpr double kTookTurnsSeconds = 20e-6;

struct alignas(64) SharedLine {
  std::atomic<std::uint32_t> turn{0};  // odd: the responder's turn; even: the initiator's
};

struct alignas(64) Control {
  std::atomic<int> ready{0};  // threads pinned (or failed): 2 when both reported
  std::atomic<bool> pin_failed{false};
  std::atomic<bool> stop{false};
};

}  // namespace

bool pin_this_thread(int cpu) {
  if (cpu < 0 || cpu >= CPU_SETSIZE) return false;
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  return pthread_setaffinity_np(pthread_self(), sizeof(set), &set) == 0;
}

std::vector<int> allowed_cpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  std::vector<int> cpus;
  if (sched_getaffinity(0, sizeof(set), &set) != 0) return cpus;
  for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu) {
    if (CPU_ISSET(cpu, &set)) cpus.push_back(cpu);
  }
  return cpus;
}

std::optional<double> core_round_trip_seconds(int cpu_a, int cpu_b, std::chrono::microseconds budget) {
  SharedLine line;
  Control control;
  auto wait_for_partner = [&control] {
    control.ready.fetch_add(1);
    while (control.ready.load() < 2) std::this_thread::yield();
    return !control.pin_failed.load();
  };

  std::thread responder([&] {
    if (!pin_this_thread(cpu_b)) control.pin_failed = true;
    if (!wait_for_partner()) return;
    std::uint32_t seen = 0;
    while (!control.stop.load(std::memory_order_relaxed)) {
      for (int spin = 0; spin < kSpinsPerClockRead; ++spin) {
        seen = line.turn.load(std::memory_order_acquire);
        if ((seen & 1U) != 0) {
          line.turn.store(seen + 1, std::memory_order_release);
          break;
        }
      }
    }
  });

  double best = std::numeric_limits<double>::infinity();
  std::thread initiator([&] {
    if (!pin_this_thread(cpu_a)) control.pin_failed = true;
    if (!wait_for_partner()) return;
    const SteadyClock::time_point start = SteadyClock::now();
    const SteadyClock::time_point soft_end = start + budget;
    const SteadyClock::time_point hard_end = start + 10 * budget;
    std::uint32_t turn = 0;
    for (;;) {
      const SteadyClock::time_point t0 = SteadyClock::now();
      if (t0 >= soft_end) break;
      for (int trip = 0; trip < kTripsPerBatch; ++trip) {
        line.turn.store(turn + 1, std::memory_order_release);
        int spins = 0;
        while (line.turn.load(std::memory_order_acquire) != turn + 2) {
          if (++spins == kSpinsPerClockRead) {
            spins = 0;
            if (SteadyClock::now() >= hard_end) return;  // the responder is not running: give up
          }
        }
        turn += 2;
      }
      const double mean = std::chrono::duration<double>(SteadyClock::now() - t0).count() / kTripsPerBatch;
      best = std::min(best, mean);
    }
  });
  initiator.join();
  control.stop = true;
  responder.join();
  if (control.pin_failed || !(best < kTookTurnsSeconds)) return std::nullopt;
  return best;
}

std::optional<double> core_round_trip_seconds(std::chrono::microseconds budget) {
  const std::vector<int> cpus = allowed_cpus();
  if (cpus.size() < 2) return std::nullopt;
  return core_round_trip_seconds(cpus[0], cpus[1], budget);
}

bool different_core_state(double a_seconds, double b_seconds, double factor) {
  return a_seconds > factor * b_seconds || b_seconds > factor * a_seconds;
}

}  // namespace dtrain
