#include "perfmodel/auto_choice.h"

#include <fmt/format.h>

#include <algorithm>

#include "perfmodel/allreduce_time.h"
#include "perfmodel/report.h"

namespace dtrain::perf {

std::vector<std::size_t> bucket_candidates(const Workload& w) {
  const std::size_t total = 4 * static_cast<std::size_t>(std::max<std::int64_t>(1, w.total_params()));
  std::vector<std::size_t> out{0};
  for (std::size_t b = std::size_t{64} << 10;; b *= 2) {
    out.push_back(b);
    if (b >= total) break;
  }
  return out;
}

AutoChoice choose_by_prediction(const Workload& w, const Profile& p, const RunConfig& base, bool choose_algorithm,
                                bool choose_bucket) {
  std::vector<comm::Algorithm> algorithms{base.algorithm};
  if (choose_algorithm) {
    algorithms = {comm::Algorithm::kRing, comm::Algorithm::kTree, comm::Algorithm::kButterfly,
                  comm::Algorithm::kOneToAll};
    if (shm_candidate(p, base.workers)) algorithms.push_back(comm::Algorithm::kShm);
  }
  std::vector<std::size_t> buckets{base.bucket_bytes};
  if (choose_bucket) buckets = bucket_candidates(w);
  AutoChoice out;
  bool first = true;
  for (comm::Algorithm a : algorithms) {
    for (std::size_t b : buckets) {
      RunConfig c = base;
      c.algorithm = a;
      c.bucket_bytes = b;
      StepPrediction s = predict_step(w, p, c);
      out.alternatives.push_back({a, b, s.step});
      if (first || s.step < out.prediction.step) {
        out.chosen = c;
        out.prediction = std::move(s);
        first = false;
      }
    }
  }
  std::stable_sort(out.alternatives.begin(), out.alternatives.end(),
                   [](const Alternative& x, const Alternative& y) { return x.step < y.step; });
  return out;
}

std::string bucket_label(std::size_t bytes) {
  if (bytes == 0) return "0 (one per parameter)";
  if (bytes >= (std::size_t{1} << 20)) return fmt::format("{:g} MiB", static_cast<double>(bytes) / (1 << 20));
  return fmt::format("{:g} KiB", static_cast<double>(bytes) / (1 << 10));
}

std::string describe_choice(const AutoChoice& c, std::size_t shown) {
  std::string s =
      fmt::format("chose {} with {} buckets: {} per step predicted", comm::algorithm_name(c.chosen.algorithm),
                  bucket_label(c.chosen.bucket_bytes), format_seconds(c.prediction.step));
  if (c.alternatives.size() > 1) {
    s += "; alternatives:";
    std::size_t n = 0;
    for (const Alternative& a : c.alternatives) {
      if (a.algorithm == c.chosen.algorithm && a.bucket_bytes == c.chosen.bucket_bytes) continue;
      if (n++ == shown) {
        s += fmt::format(" ... ({} more)", c.alternatives.size() - 1 - shown);
        break;
      }
      s += fmt::format("{} {} {} {}", n > 1 ? "," : "", comm::algorithm_name(a.algorithm), bucket_label(a.bucket_bytes),
                       format_seconds(a.step));
    }
  }
  return s;
}

}  // namespace dtrain::perf
