// Monotonic wall-clock timing for the metrics log and benchmarks.
#pragma once

#include <chrono>

namespace dtrain {

inline double now_seconds() {
  using Clock = std::chrono::steady_clock;
  return std::chrono::duration<double>(Clock::now().time_since_epoch()).count();
}

class Stopwatch {
 public:
  Stopwatch() : start_(now_seconds()) {}
  void reset() { start_ = now_seconds(); }
  double seconds() const { return now_seconds() - start_; }

 private:
  double start_;
};

}  // namespace dtrain
