#include "parallel/comm_worker.h"

#include "comm/exact_sum.h"

namespace dtrain {

CommWorker::CommWorker(comm::Communicator& comm) : comm_(comm), thread_([this] { loop(); }) {}

CommWorker::~CommWorker() {
  {
    std::lock_guard lock(mutex_);
    stop_ = true;
  }
  work_.notify_one();
  thread_.join();
}

std::uint64_t CommWorker::submit(Job job) {
  std::lock_guard lock(mutex_);
  queue_.push_back(std::move(job));
  work_.notify_one();
  return ++submitted_;
}

void CommWorker::wait(std::uint64_t ticket) {
  std::unique_lock lock(mutex_);
  done_.wait(lock, [&] { return completed_ >= ticket || error_ != nullptr; });
  if (error_) std::rethrow_exception(error_);
}

void CommWorker::loop() {
  std::unique_lock lock(mutex_);
  for (;;) {
    work_.wait(lock, [&] { return stop_ || !queue_.empty(); });
    if (queue_.empty()) return;  // stop requested and nothing left
    Job job = std::move(queue_.front());
    queue_.pop_front();
    const bool failed = error_ != nullptr;
    lock.unlock();
    std::exception_ptr err;
    if (!failed) {  // after a failure the remaining jobs are skipped
      try {
        job(comm_);
      } catch (...) {
        err = std::current_exception();
      }
    }
    lock.lock();
    if (err && !error_) error_ = err;
    ++completed_;
    done_.notify_all();
  }
}

std::function<void(std::vector<double>&)> exact_sum_through(CommWorker& worker) {
  return [&worker](std::vector<double>& values) {
    worker.run([&values](comm::Communicator& c) { comm::sum_in_rank_order(c, values); });
  };
}

}  // namespace dtrain
