// How a rank waits for a message it polls for (MPI_Testall): spin, then yield, then sleep.
//
// A message between ranks on one host arrives within microseconds once the peer has sent it, so
// the first polls spin. A longer wait means the peer is still computing, and then the waiting
// thread (the data-parallel communication thread, which shares its rank's core with the
// backward pass) must give the core back: sched_yield alone does not, because the scheduler
// keeps a yielding thread on the core whenever it is the only one queued there, so after the
// yield phase the waiter sleeps, for intervals that double up to kMaxSleep. A message that
// arrives during a sleep is seen at most kMaxSleep (plus the kernel's timer slack) late; waits
// that long are the ones where the peer was computing for hundreds of microseconds anyway.
#pragma once

#include <sched.h>

#include <algorithm>
#include <chrono>
#include <thread>

namespace dtrain::comm {

class PollBackoff {
 public:
  using Clock = std::chrono::steady_clock;
  static constexpr std::chrono::microseconds kSpin{20};
  static constexpr std::chrono::microseconds kYield{200};
  static constexpr std::chrono::microseconds kFirstSleep{5};
  static constexpr std::chrono::microseconds kMaxSleep{50};

  // Called after each poll that found nothing; returns the time it read (for deadlines).
  Clock::time_point pause() {
    const Clock::time_point now = Clock::now();
    const auto waited = now - start_;
    if (waited < kSpin) return now;
    if (waited < kYield) {
      sched_yield();
      return now;
    }
    std::this_thread::sleep_for(sleep_);
    sleep_ = std::min(sleep_ * 2, kMaxSleep);
    return Clock::now();
  }

 private:
  Clock::time_point start_ = Clock::now();
  std::chrono::microseconds sleep_ = kFirstSleep;
};

}  // namespace dtrain::comm
