// Reference softmax cross-entropy, numerically stable: log softmax(z)_k = z_k - m - log sum exp(z - m)
// with m = max(z). Loss is the mean over the batch of -log softmax(z)_label.
#include <cmath>

#include "tensor/kernels/geometry.h"
#include "tensor/kernels/reference/reference_backend.h"
#include "tensor/kernels/reference/typed.h"

namespace dtrain {
Tensor ReferenceBackend::softmax_cross_entropy_forward(const Tensor& logits, const Tensor& labels, double smoothing,
                                                       Tensor& probs) {
  check_labels(logits, labels);
  const std::int64_t N = logits.size(0), K = logits.size(1);
  probs = Tensor::empty(logits.shape(), logits.dtype());
  Tensor loss = Tensor::empty({1}, logits.dtype());
  ref::visit_float(logits.dtype(), [&](auto z) {
    using T = decltype(z);
    const T* pz = logits.data<T>();
    T* pp = probs.data<T>();
    double total = 0;
    for (std::int64_t n = 0; n < N; ++n) {
      double m = pz[n * K];
      for (std::int64_t k = 1; k < K; ++k) m = std::max<double>(m, pz[n * K + k]);
      double s = 0;
      for (std::int64_t k = 0; k < K; ++k) s += std::exp(pz[n * K + k] - m);
      double sum_z = 0;
      for (std::int64_t k = 0; k < K; ++k) {
        pp[n * K + k] = static_cast<T>(std::exp(pz[n * K + k] - m) / s);
        sum_z += pz[n * K + k];
      }
      const double log_sum = std::log(s) + m;
      total += (1 - smoothing) * (log_sum - pz[n * K + labels.data<std::int32_t>()[n]]) +
               smoothing * (log_sum - sum_z / static_cast<double>(K));
    }
    loss.data<T>()[0] = static_cast<T>(N > 0 ? total / static_cast<double>(N) : 0.0);
  });
  return loss;
}

Tensor ReferenceBackend::softmax_cross_entropy_backward(const Tensor& probs, const Tensor& labels, double smoothing,
                                                        double dloss) {
  const std::int64_t N = probs.size(0), K = probs.size(1);
  Tensor d = Tensor::empty(probs.shape(), probs.dtype());
  ref::visit_float(probs.dtype(), [&](auto z) {
    using T = decltype(z);
    const double f = dloss / static_cast<double>(N);
    for (std::int64_t n = 0; n < N; ++n) {
      for (std::int64_t k = 0; k < K; ++k) {
        const double target =
            (labels.data<std::int32_t>()[n] == k ? 1.0 - smoothing : 0.0) + smoothing / static_cast<double>(K);
        d.data<T>()[n * K + k] = static_cast<T>((probs.data<T>()[n * K + k] - target) * f);
      }
    }
  });
  return d;
}

std::int64_t ReferenceBackend::count_correct(const Tensor& logits, const Tensor& labels) {
  check_labels(logits, labels);
  const Tensor z = logits.to(DType::kF64);
  const std::int64_t N = z.size(0), K = z.size(1);
  std::int64_t correct = 0;
  for (std::int64_t n = 0; n < N; ++n) {
    std::int64_t best = 0;
    for (std::int64_t k = 1; k < K; ++k) {
      if (z.data<double>()[n * K + k] > z.data<double>()[n * K + best]) best = k;
    }
    correct += best == labels.data<std::int32_t>()[n];
  }
  return correct;
}

}  // namespace dtrain
