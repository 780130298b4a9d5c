// Reference optimizer updates, one element at a time, exactly as backend.h states them.
#include <cmath>

#include "tensor/kernels/reference/reference_backend.h"
#include "tensor/kernels/reference/typed.h"

namespace dtrain {

void ReferenceBackend::sgd_update(Tensor& w, const Tensor& g_in, Tensor& v, const SgdHyper& h) {
  const Tensor g = g_in.to_layout(w.layout());
  ref::visit_float(w.dtype(), [&](auto z) {
    using T = decltype(z);
    T* pw = w.data<T>();
    T* pv = v.data<T>();
    const T* pg = g.data<T>();
    for (std::int64_t i = 0; i < w.numel(); ++i) {
      const double grad = pg[i] + h.weight_decay * pw[i];
      pv[i] = static_cast<T>(h.momentum * h.velocity_scale * pv[i] - h.lr * grad);
      pw[i] += static_cast<T>(h.nesterov ? h.momentum * pv[i] - h.lr * grad : pv[i]);
    }
  });
}

void ReferenceBackend::rmsprop_update(Tensor& w, const Tensor& g_in, Tensor& s, const RmspropHyper& h) {
  const Tensor g = g_in.to_layout(w.layout());
  ref::visit_float(w.dtype(), [&](auto z) {
    using T = decltype(z);
    T* pw = w.data<T>();
    T* ps = s.data<T>();
    const T* pg = g.data<T>();
    for (std::int64_t i = 0; i < w.numel(); ++i) {
      const double grad = pg[i] + h.weight_decay * pw[i];
      ps[i] = static_cast<T>(h.alpha * ps[i] + (1 - h.alpha) * grad * grad);
      pw[i] -= static_cast<T>(h.lr * grad / (std::sqrt(static_cast<double>(ps[i])) + h.eps));
    }
  });
}

void ReferenceBackend::adam_update(Tensor& w, const Tensor& g_in, Tensor& m, Tensor& v, const AdamHyper& h) {
  const Tensor g = g_in.to_layout(w.layout());
  const double c1 = 1 - std::pow(h.beta1, static_cast<double>(h.step));
  const double c2 = 1 - std::pow(h.beta2, static_cast<double>(h.step));
  ref::visit_float(w.dtype(), [&](auto z) {
    using T = decltype(z);
    T* pw = w.data<T>();
    T* pm = m.data<T>();
    T* pv = v.data<T>();
    const T* pg = g.data<T>();
    for (std::int64_t i = 0; i < w.numel(); ++i) {
      const double grad = pg[i] + h.weight_decay * pw[i];
      pm[i] = static_cast<T>(h.beta1 * pm[i] + (1 - h.beta1) * grad);
      pv[i] = static_cast<T>(h.beta2 * pv[i] + (1 - h.beta2) * grad * grad);
      const double mhat = pm[i] / c1, vhat = pv[i] / c2;
      pw[i] -= static_cast<T>(h.lr * mhat / (std::sqrt(vhat) + h.eps));
    }
  });
}

}  // namespace dtrain
