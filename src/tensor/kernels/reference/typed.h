// Helpers shared by the reference kernels: float-type dispatch and plain views.
#pragma once

#include "tensor/tensor.h"

namespace dtrain::ref {

// Calls f(T{}) with T = float or double for the tensor's dtype.
template <typename F>
decltype(auto) visit_float(DType t, F&& f) {
  if (t == DType::kF32) return f(float{});
  if (t == DType::kF64) return f(double{});
  throw InternalError(fmt::format("reference kernels compute in f32 or f64, got {}", dtype_name(t)));
}

inline Tensor plain(const Tensor& t) { return t.to_plain(); }

inline void check_same_dtype(const Tensor& a, const Tensor& b, const char* what) {
  if (a.dtype() != b.dtype()) {
    throw ShapeError(fmt::format("{}: dtypes differ: {} vs {}", what, dtype_name(a.dtype()), dtype_name(b.dtype())));
  }
}

}  // namespace dtrain::ref
