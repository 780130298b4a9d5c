// What an updater tells a trace (trace_recorder.h) besides the layers' forward and backward: when
// each gradient bucket's allreduce starts and ends (called on the communication thread) and when
// the optimizer update runs (on the training thread), as parallel/data_parallel.h calls it; or,
// in parameter-server training (ps/ps_updater.h, on the training thread), each shard's push and
// the pull of the next weights.
#pragma once

#include <cstddef>
#include <cstdint>

namespace dtrain {

class UpdateObserver {
 public:
  virtual ~UpdateObserver() = default;
  virtual void bucket_begin(std::size_t bucket, std::int64_t elements) = 0;
  virtual void bucket_end(std::size_t bucket) = 0;
  virtual void update_begin() = 0;
  virtual void update_end() = 0;
  virtual void push_begin(std::size_t /*shard*/) {}
  virtual void push_end(std::size_t /*shard*/) {}
  virtual void pull_begin() {}
  virtual void pull_end() {}
};

}  // namespace dtrain
