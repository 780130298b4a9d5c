#include "ps/clock_gate.h"

#include <algorithm>
#include <limits>

#include "core/error.h"

namespace dtrain::ps {

void Histogram::add(std::int64_t value) { add_many(value, 1); }

void Histogram::add_many(std::int64_t value, std::int64_t count) {
  DT_CHECK(value >= 0 && count >= 0, "histogram of non-negative values, got {} x {}", count, value);
  const auto v = static_cast<std::size_t>(value);
  if (v >= counts_.size()) counts_.resize(v + 1, 0);
  counts_[v] += count;
  total_ += count;
  sum_ += static_cast<double>(value) * static_cast<double>(count);
}

std::int64_t Histogram::max() const {
  for (std::size_t v = counts_.size(); v > 0; --v) {
    if (counts_[v - 1] > 0) return static_cast<std::int64_t>(v - 1);
  }
  return -1;
}

double Histogram::mean() const { return total_ == 0 ? 0.0 : sum_ / static_cast<double>(total_); }

void Histogram::merge(const Histogram& other) {
  if (other.counts_.size() > counts_.size()) counts_.resize(other.counts_.size(), 0);
  for (std::size_t v = 0; v < other.counts_.size(); ++v) counts_[v] += other.counts_[v];
  total_ += other.total_;
  sum_ += other.sum_;
}

ClockGate::ClockGate(int workers, std::int64_t staleness)
    : staleness_(staleness),
      clocks_(static_cast<std::size_t>(workers), 0),
      finished_(static_cast<std::size_t>(workers), false),
      reads_(static_cast<std::size_t>(workers)),
      worker_taus_(static_cast<std::size_t>(workers)) {
  DT_CHECK(workers >= 1, "a clock gate for {} workers", workers);
  DT_CHECK(staleness >= 0 || staleness == kUnbounded, "staleness {}", staleness);
}

void ClockGate::check_worker(int worker) const {
  DT_CHECK(worker >= 0 && worker < workers(), "worker {} of {}", worker, workers());
}

std::int64_t ClockGate::clock(int worker) const {
  check_worker(worker);
  return clocks_[static_cast<std::size_t>(worker)];
}

bool ClockGate::finished(int worker) const {
  check_worker(worker);
  return finished_[static_cast<std::size_t>(worker)];
}

std::int64_t ClockGate::min_clock() const {
  std::int64_t m = std::numeric_limits<std::int64_t>::max();
  for (std::size_t w = 0; w < clocks_.size(); ++w) {
    if (!finished_[w]) m = std::min(m, clocks_[w]);
  }
  return m;
}

void ClockGate::advance(int worker) {
  check_worker(worker);
  DT_CHECK(!finished_[static_cast<std::size_t>(worker)], "a push from worker {} after it finished", worker);
  ++clocks_[static_cast<std::size_t>(worker)];
}

void ClockGate::finish(int worker) {
  check_worker(worker);
  finished_[static_cast<std::size_t>(worker)] = true;
}

bool ClockGate::may_read(int worker, std::int64_t c) const {
  if (clock(worker) < c) return false;
  return staleness_ == kUnbounded || min_clock() >= c - staleness_;
}

void ClockGate::record_read(int worker, std::int64_t c, std::int64_t version) {
  DT_CHECK(may_read(worker, c), "worker {} read clock {} through a closed gate", worker, c);
  // The reader's own clock is >= c, so the minimum over unfinished workers is finite here.
  reads_[static_cast<std::size_t>(worker)] = {c, std::max<std::int64_t>(0, c - min_clock()), version};
}

std::int64_t ClockGate::record_apply(int worker, std::int64_t c, std::int64_t version) {
  check_worker(worker);
  const Read& r = reads_[static_cast<std::size_t>(worker)];
  DT_CHECK(r.clock == c, "worker {} pushed a gradient of clock {}, but its last read was of clock {}", worker, c,
           r.clock);
  DT_CHECK(version >= r.version, "update {} before the read at update {}", version, r.version);
  gaps_.add(r.gap);
  taus_.add(version - r.version);
  worker_taus_[static_cast<std::size_t>(worker)].add(version - r.version);
  return version - r.version;
}

const Histogram& ClockGate::taus_of(int worker) const {
  check_worker(worker);
  return worker_taus_[static_cast<std::size_t>(worker)];
}

}  // namespace dtrain::ps
