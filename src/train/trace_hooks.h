// What an updater tells a trace (trace_recorder.h) besides the layers' forward and backward: when
// each gradient bucket's allreduce starts and ends (called on the communication thread) and when
// the optimizer update runs (on the training thread). parallel/data_parallel.h calls it.
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
};

}  // namespace dtrain
