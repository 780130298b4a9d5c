// Which gradients share a bucket, and where each lies in it: the plan both the data-parallel
// trainer (parallel/buckets.h, which owns the buffers and their life during a step) and the
// performance model (perfmodel/step_model.h, which prices the same buckets) follow.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "comm/algorithm.h"
#include "tensor/dtype.h"

namespace dtrain {

struct BucketLayout {
  std::vector<std::vector<std::size_t>> buckets;  // parameter indices, in readiness order
  std::vector<std::size_t> bucket_of;             // parameter index -> bucket
  std::vector<std::int64_t> offset;               // parameter index -> element offset in its bucket
  std::vector<std::int64_t> bucket_elements;
  bool adopt = true;  // whether one-parameter buckets adopt their gradient

  // A bucket of one parameter adopts that parameter's gradient instead of copying it (parallel/buckets.h),
  // unless its f32 buffer must lie in shared memory (adopts_gradients); the performance model
  // charges the copies by the same rule.
  bool adopts_gradient(std::size_t bucket) const { return adopt && buckets[bucket].size() == 1; }
};

// Groups parameters (element counts in registration order) into buckets of at most
// bucket_bytes of f32 (a larger parameter gets a bucket of its own), walking from the last
// parameter to the first. bucket_bytes = 0 puts every parameter in its own bucket.
BucketLayout plan_buckets(const std::vector<std::int64_t>& numels, std::size_t bucket_bytes, bool adopt = true);

// Whether one-parameter buckets adopt gradients for this allreduce: only with f32 on the wire
// (f16 and bf16: each gradient is cast into its wire slot, one pass, as it would be copied), and
// not when the f32 bucket must lie in the ranks' shared memory (shm: copying a gradient in costs
// one pass, staging it through shared memory two).
bool adopts_gradients(comm::Algorithm algorithm, DType comm_dtype);
bool adopts_gradients(bool shared_memory, DType comm_dtype);

}  // namespace dtrain
