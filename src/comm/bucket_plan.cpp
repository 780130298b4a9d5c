#include "comm/bucket_plan.h"

namespace dtrain {

bool adopts_gradients(comm::Algorithm algorithm, DType comm_dtype) {
  return adopts_gradients(algorithm == comm::Algorithm::kShm, comm_dtype);
}

bool adopts_gradients(bool shared_memory, DType comm_dtype) { return !shared_memory && comm_dtype == DType::kF32; }

BucketLayout plan_buckets(const std::vector<std::int64_t>& numels, std::size_t bucket_bytes, bool adopt) {
  BucketLayout l;
  l.adopt = adopt;
  l.bucket_of = std::vector<std::size_t>(numels.size(), 0);
  l.offset = std::vector<std::int64_t>(numels.size(), 0);
  std::int64_t filled = 0;
  for (std::size_t k = numels.size(); k-- > 0;) {
    const bool fits =
        !l.buckets.empty() && bucket_bytes > 0 && static_cast<std::size_t>((filled + numels[k]) * 4) <= bucket_bytes;
    if (!fits) {
      l.buckets.emplace_back();
      l.bucket_elements.push_back(0);
      filled = 0;
    }
    l.buckets.back().push_back(k);
    l.bucket_of[k] = l.buckets.size() - 1;
    l.offset[k] = filled;
    filled += numels[k];
    l.bucket_elements.back() = filled;
  }
  return l;
}

}  // namespace dtrain
