// Reference linear layer: y = x W^T + b as triple loops.
#include "tensor/kernels/geometry.h"
#include "tensor/kernels/reference/reference_backend.h"
#include "tensor/kernels/reference/typed.h"

namespace dtrain {

Tensor ReferenceBackend::linear_forward(const Tensor& x, const Tensor& w, const Tensor* b) {
  check_linear(x, w);
  const std::int64_t N = x.size(0), I = x.size(1), O = w.size(0);
  Tensor y = Tensor::empty({N, O}, x.dtype());
  ref::visit_float(x.dtype(), [&](auto z) {
    using T = decltype(z);
    const T* px = x.data<T>();
    const T* pw = w.data<T>();
    const T* pb = b ? b->data<T>() : nullptr;
    T* py = y.data<T>();
    for (std::int64_t n = 0; n < N; ++n) {
      for (std::int64_t o = 0; o < O; ++o) {
        T acc = pb ? pb[o] : T(0);
        for (std::int64_t i = 0; i < I; ++i) acc += px[n * I + i] * pw[o * I + i];
        py[n * O + o] = acc;
      }
    }
  });
  return y;
}

Tensor ReferenceBackend::linear_backward_data(const Tensor& dy, const Tensor& w) {
  const std::int64_t N = dy.size(0), O = w.size(0), I = w.size(1);
  DT_CHECK_EQ(dy.size(1), O);
  Tensor dx = Tensor::empty({N, I}, dy.dtype());
  ref::visit_float(dy.dtype(), [&](auto z) {
    using T = decltype(z);
    const T* g = dy.data<T>();
    const T* pw = w.data<T>();
    T* d = dx.data<T>();
    for (std::int64_t n = 0; n < N; ++n) {
      for (std::int64_t i = 0; i < I; ++i) {
        T acc = 0;
        for (std::int64_t o = 0; o < O; ++o) acc += g[n * O + o] * pw[o * I + i];
        d[n * I + i] = acc;
      }
    }
  });
  return dx;
}

// Ignores a scaled destination (backend.h: WeightGradInto): the reference writes f32.
WeightGrads ReferenceBackend::linear_backward_weights(const Tensor& dy, const Tensor& x, bool with_bias,
                                                      const WeightGradInto& into) {
  const std::int64_t N = x.size(0), I = x.size(1), O = dy.size(1);
  DT_CHECK_EQ(dy.size(0), N);
  WeightGrads out{Tensor::empty({O, I}, x.dtype()), with_bias ? Tensor::empty({O}, x.dtype()) : Tensor()};
  ref::visit_float(x.dtype(), [&](auto z) {
    using T = decltype(z);
    const T* g = dy.data<T>();
    const T* px = x.data<T>();
    T* dw = out.dw.template data<T>();
    for (std::int64_t o = 0; o < O; ++o) {
      for (std::int64_t i = 0; i < I; ++i) {
        T acc = 0;
        for (std::int64_t n = 0; n < N; ++n) acc += g[n * O + o] * px[n * I + i];
        dw[o * I + i] = acc;
      }
    }
    if (with_bias) {
      T* db = out.db.template data<T>();
      for (std::int64_t o = 0; o < O; ++o) {
        T acc = 0;
        for (std::int64_t n = 0; n < N; ++n) acc += g[n * O + o];
        db[o] = acc;
      }
    }
  });
  if (into.f32 != nullptr) {
    check_weight_destination(*into.f32, out.dw.shape());
    Tensor dw = *into.f32;  // a handle on the caller's storage
    dw.copy_from(out.dw);
    out.dw = dw;
  }
  return out;
}

}  // namespace dtrain
