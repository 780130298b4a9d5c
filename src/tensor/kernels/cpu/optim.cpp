// Optimizer updates as single vectorised passes over contiguous storage (any layout, since w,
// g and the state share it). Each element is computed in f64 exactly as the reference does and
// rounded at the same points, so both backends give the same f32 results; the passes are
// memory-bound, so the f64 arithmetic costs nothing measurable.
#include <cmath>

#include "tensor/kernels/cpu/cpu_backend.h"

namespace dtrain {
namespace {

// Below this many elements an update runs on the calling thread, still vectorised (`if
// (parallel : ...)`, elementwise.cpp says why).
constexpr std::int64_t kUpdateParallelMin = 1 << 15;

void check_state(const Tensor& w, const Tensor& s, const char* what) {
  check_same_shape(w, s, what);
  DT_CHECK(w.layout() == s.layout(), "{}: state layout {} differs from the weights' {}", what, layout_name(s.layout()),
           layout_name(w.layout()));
}

}  // namespace

void CpuBackend::sgd_update(Tensor& w, const Tensor& g_in, Tensor& v, const SgdHyper& h) {
  if (!all_f32({&w, &g_in, &v})) return ReferenceBackend::sgd_update(w, g_in, v, h);
  check_same_shape(w, g_in, "sgd_update");
  check_state(w, v, "sgd_update");
  const Tensor g = g_in.to_layout(w.layout());
  float* pw = w.data<float>();
  float* pv = v.data<float>();
  const float* pg = g.data<float>();
  const std::int64_t n = w.numel();
  const double lr = h.lr, mu = h.momentum, wd = h.weight_decay, decay = h.momentum * h.velocity_scale;
  // NOLINTNEXTLINE(bugprone-branch-clone): clang-tidy 14 compares the two OpenMP regions, not their loops
  if (h.nesterov) {
#pragma omp parallel for simd schedule(static) if (parallel : n > kUpdateParallelMin)
    for (std::int64_t i = 0; i < n; ++i) {
      const double grad = pg[i] + wd * pw[i];
      const float vn = static_cast<float>(decay * pv[i] - lr * grad);
      pv[i] = vn;
      pw[i] += static_cast<float>(mu * vn - lr * grad);
    }
  } else {
#pragma omp parallel for simd schedule(static) if (parallel : n > kUpdateParallelMin)
    for (std::int64_t i = 0; i < n; ++i) {
      const double grad = pg[i] + wd * pw[i];
      const float vn = static_cast<float>(decay * pv[i] - lr * grad);
      pv[i] = vn;
      pw[i] += vn;
    }
  }
}

void CpuBackend::rmsprop_update(Tensor& w, const Tensor& g_in, Tensor& s, const RmspropHyper& h) {
  if (!all_f32({&w, &g_in, &s})) return ReferenceBackend::rmsprop_update(w, g_in, s, h);
  check_same_shape(w, g_in, "rmsprop_update");
  check_state(w, s, "rmsprop_update");
  const Tensor g = g_in.to_layout(w.layout());
  float* pw = w.data<float>();
  float* ps = s.data<float>();
  const float* pg = g.data<float>();
  const std::int64_t n = w.numel();
  const double lr = h.lr, alpha = h.alpha, eps = h.eps, wd = h.weight_decay;
#pragma omp parallel for simd schedule(static) if (parallel : n > kUpdateParallelMin)
  for (std::int64_t i = 0; i < n; ++i) {
    const double grad = pg[i] + wd * pw[i];
    const float sn = static_cast<float>(alpha * ps[i] + (1 - alpha) * grad * grad);
    ps[i] = sn;
    pw[i] -= static_cast<float>(lr * grad / (std::sqrt(static_cast<double>(sn)) + eps));
  }
}

void CpuBackend::adam_update(Tensor& w, const Tensor& g_in, Tensor& m, Tensor& v, const AdamHyper& h) {
  if (!all_f32({&w, &g_in, &m, &v})) return ReferenceBackend::adam_update(w, g_in, m, v, h);
  check_same_shape(w, g_in, "adam_update");
  check_state(w, m, "adam_update");
  check_state(w, v, "adam_update");
  const Tensor g = g_in.to_layout(w.layout());
  const double c1 = 1 - std::pow(h.beta1, static_cast<double>(h.step));
  const double c2 = 1 - std::pow(h.beta2, static_cast<double>(h.step));
  float* pw = w.data<float>();
  float* pm = m.data<float>();
  float* pv = v.data<float>();
  const float* pg = g.data<float>();
  const std::int64_t n = w.numel();
  const double lr = h.lr, b1 = h.beta1, b2 = h.beta2, eps = h.eps, wd = h.weight_decay;
#pragma omp parallel for simd schedule(static) if (parallel : n > kUpdateParallelMin)
  for (std::int64_t i = 0; i < n; ++i) {
    const double grad = pg[i] + wd * pw[i];
    const float mn = static_cast<float>(b1 * pm[i] + (1 - b1) * grad);
    const float vn = static_cast<float>(b2 * pv[i] + (1 - b2) * grad * grad);
    pm[i] = mn;
    pv[i] = vn;
    const double mhat = mn / c1, vhat = vn / c2;
    pw[i] -= static_cast<float>(lr * mhat / (std::sqrt(vhat) + eps));
  }
}

}  // namespace dtrain
