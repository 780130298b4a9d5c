// A background thread that runs communication jobs in submission order. Gradient buckets are
// allreduced on it while the main thread continues the backward pass (or, with double buffering,
// the next step), and every other collective of a data-parallel run (evaluation sums, the
// start-up broadcast) goes through it too, so only one thread at a time ever calls into the
// transport (MPI_THREAD_SERIALIZED is enough).
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <exception>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

#include "comm/communicator.h"

namespace dtrain {

class CommWorker {
 public:
  using Job = std::function<void(comm::Communicator&)>;

  explicit CommWorker(comm::Communicator& comm);
  ~CommWorker();  // finishes queued jobs, then joins
  CommWorker(const CommWorker&) = delete;
  CommWorker& operator=(const CommWorker&) = delete;

  // Queues a job; returns its ticket (1, 2, ...).
  std::uint64_t submit(Job job);
  // Blocks until every job up to `ticket` has run; rethrows the first job's exception (and keeps
  // rethrowing it: after a failed collective the communicator is unusable).
  void wait(std::uint64_t ticket);
  void wait_all() { wait(submitted_); }
  // Runs a job on the worker and waits for it.
  void run(Job job) { wait(submit(std::move(job))); }
  comm::Communicator& communicator() { return comm_; }

 private:
  void loop();

  comm::Communicator& comm_;
  std::mutex mutex_;
  std::condition_variable work_, done_;
  std::deque<Job> queue_;
  std::uint64_t submitted_ = 0;  // touched by the submitting thread only, and under mutex_
  std::uint64_t completed_ = 0;
  bool stop_ = false;
  std::exception_ptr error_;
  std::thread thread_;
};

// Sums doubles over the communicator's ranks through `worker` (waiting for the jobs queued before
// it), identically on every rank (comm/exact_sum.h). `worker` must outlive the function.
std::function<void(std::vector<double>&)> exact_sum_through(CommWorker& worker);

}  // namespace dtrain
