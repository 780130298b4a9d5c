// The consistency rule of parameter-server training, as one gate (Angel's single staleness
// integer; Bösen parks a row request the same way): a worker's clock is the number of its pushes
// the server has applied, and a pull for clock c (the weights a worker computes its c-th gradient
// from, clocks counted from 0) is answered when
//
//     clock(reader) >= c                          (read-my-writes: its own c pushes are in)
//     min over unfinished workers of clock >= c - S
//
// S = 0 is bulk-synchronous (BSP: every worker's first c pushes are in), S > 0 stale-synchronous
// (SSP, Ho et al. 2013: the weights lack no update older than clock c - S), and S unbounded
// asynchronous (ASP: only read-my-writes). A finished worker holds nobody back.
//
// What each applied gradient saw is recorded in clocks and in updates:
//   gap = c - min_w clock(w) at the read: the reader's clock minus the oldest clock whose update
//         the weights it read may lack. The gate makes gap <= S; SSP's guarantee is this bound.
//   tau = server updates between the read and the apply of the gradient computed from it. It is
//         not bounded by S (each other worker may move from c - S to c + S meanwhile); with W
//         equal workers applying every push at once its mean is about W - 1.
// Pure bookkeeping, no transport: the server (ps/server.h) drives it.
#pragma once

#include <cstdint>
#include <vector>

namespace dtrain::ps {

// Counts of non-negative integers.
class Histogram {
 public:
  void add(std::int64_t value);
  void add_many(std::int64_t value, std::int64_t count);
  std::int64_t total() const { return total_; }
  const std::vector<std::int64_t>& counts() const { return counts_; }  // counts()[v]: how often v
  std::int64_t max() const;                                            // -1 when empty
  double mean() const;                                                 // 0 when empty
  void merge(const Histogram& other);

 private:
  std::vector<std::int64_t> counts_;
  std::int64_t total_ = 0;
  double sum_ = 0;
};

class ClockGate {
 public:
  static constexpr std::int64_t kUnbounded = -1;  // ASP's staleness

  // `staleness` >= 0, or kUnbounded.
  ClockGate(int workers, std::int64_t staleness);

  int workers() const { return static_cast<int>(clocks_.size()); }
  std::int64_t staleness() const { return staleness_; }
  std::int64_t clock(int worker) const;
  bool finished(int worker) const;
  // The smallest clock of the unfinished workers; INT64_MAX when all finished.
  std::int64_t min_clock() const;

  // One more of `worker`'s pushes is applied.
  void advance(int worker);
  // `worker` pushes no more.
  void finish(int worker);
  // Whether a pull for clock c by `worker` may be answered now.
  bool may_read(int worker, std::int64_t c) const;

  // `worker` read the weights for clock c (may_read held) after the server's `version`-th update.
  void record_read(int worker, std::int64_t c, std::int64_t version);
  // The gradient `worker` computed from its last read (of clock c) is applied as the server's
  // update number `version` (0-based: the number of updates before it). Returns its tau.
  std::int64_t record_apply(int worker, std::int64_t c, std::int64_t version);
  const Histogram& gaps() const { return gaps_; }
  const Histogram& taus() const { return taus_; }
  // Of the gradients `worker` pushed.
  const Histogram& taus_of(int worker) const;

 private:
  struct Read {
    std::int64_t clock = -1, gap = 0, version = 0;
  };
  void check_worker(int worker) const;

  std::int64_t staleness_;
  std::vector<std::int64_t> clocks_;
  std::vector<bool> finished_;
  std::vector<Read> reads_;
  Histogram gaps_, taus_;
  std::vector<Histogram> worker_taus_;
};

}  // namespace dtrain::ps
