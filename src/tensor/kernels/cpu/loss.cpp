// Softmax cross-entropy on rows of logits [N, K]: max-shifted exponentials (no overflow), f32
// per element with f64 row sums and loss total; rows split over threads for large batches.
#include <algorithm>
#include <cmath>

#include "tensor/kernels/cpu/cpu_backend.h"
#include "tensor/kernels/geometry.h"

namespace dtrain {
namespace {

constexpr std::int64_t kLossParallelMin = 1 << 15;  // elements

}  // namespace

Tensor CpuBackend::softmax_cross_entropy_forward(const Tensor& logits, const Tensor& labels, double smoothing,
                                                 Tensor& probs) {
  if (logits.dtype() != DType::kF32) {
    return ReferenceBackend::softmax_cross_entropy_forward(logits, labels, smoothing, probs);
  }
  check_labels(logits, labels);
  const std::int64_t N = logits.size(0), K = logits.size(1);
  probs = Tensor::empty(logits.shape(), DType::kF32);
  const float* pz = logits.data<float>();
  const std::int32_t* pl = labels.data<std::int32_t>();
  float* pp = probs.data<float>();
  double total = 0;
#pragma omp parallel for schedule(static) reduction(+ : total) if (N * K > kLossParallelMin)
  for (std::int64_t n = 0; n < N; ++n) {
    const float* z = pz + n * K;
    float* p = pp + n * K;
    float m = z[0];
    for (std::int64_t k = 1; k < K; ++k) m = std::max(m, z[k]);
    double s = 0, sum_z = 0;
    for (std::int64_t k = 0; k < K; ++k) {
      p[k] = std::exp(z[k] - m);
      s += p[k];
      sum_z += z[k];
    }
    const float inv = static_cast<float>(1.0 / s);
#pragma omp simd
    for (std::int64_t k = 0; k < K; ++k) p[k] *= inv;
    const double log_sum = std::log(s) + static_cast<double>(m);
    total += (1 - smoothing) * (log_sum - static_cast<double>(z[pl[n]])) +
             smoothing * (log_sum - sum_z / static_cast<double>(K));
  }
  Tensor loss = Tensor::empty({1}, DType::kF32);
  loss.data<float>()[0] = static_cast<float>(N > 0 ? total / static_cast<double>(N) : 0.0);
  return loss;
}

Tensor CpuBackend::softmax_cross_entropy_backward(const Tensor& probs, const Tensor& labels, double smoothing,
                                                  double dloss) {
  if (probs.dtype() != DType::kF32) {
    return ReferenceBackend::softmax_cross_entropy_backward(probs, labels, smoothing, dloss);
  }
  check_labels(probs, labels);
  const std::int64_t N = probs.size(0), K = probs.size(1);
  Tensor d = Tensor::empty(probs.shape(), DType::kF32);
  const float* pp = probs.data<float>();
  const std::int32_t* pl = labels.data<std::int32_t>();
  float* pd = d.data<float>();
  const float f = static_cast<float>(N > 0 ? dloss / static_cast<double>(N) : 0.0);
  const float spread = static_cast<float>(smoothing / static_cast<double>(K));  // s / K on every class
  const float hit = static_cast<float>(1.0 - smoothing);                        // 1 - s more on the label
#pragma omp parallel for schedule(static) if (N * K > kLossParallelMin)
  for (std::int64_t n = 0; n < N; ++n) {
#pragma omp simd
    for (std::int64_t k = 0; k < K; ++k) pd[n * K + k] = (pp[n * K + k] - spread) * f;
    pd[n * K + pl[n]] = (pp[n * K + pl[n]] - spread - hit) * f;
  }
  return d;
}

std::int64_t CpuBackend::count_correct(const Tensor& logits, const Tensor& labels) {
  if (logits.dtype() != DType::kF32) return ReferenceBackend::count_correct(logits, labels);
  check_labels(logits, labels);
  const std::int64_t N = logits.size(0), K = logits.size(1);
  const float* pz = logits.data<float>();
  const std::int32_t* pl = labels.data<std::int32_t>();
  std::int64_t correct = 0;
#pragma omp parallel for schedule(static) reduction(+ : correct) if (N * K > kLossParallelMin)
  for (std::int64_t n = 0; n < N; ++n) {
    const float* z = pz + n * K;
    std::int64_t best = 0;
    for (std::int64_t k = 1; k < K; ++k) {
      if (z[k] > z[best]) best = k;  // first maximum wins, as in the reference
    }
    correct += best == pl[n] ? 1 : 0;
  }
  return correct;
}

}  // namespace dtrain
