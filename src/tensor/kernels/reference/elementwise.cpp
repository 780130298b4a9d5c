// Reference elementwise kernels, conversions and reductions.
#include <cmath>
#include <cstring>

#include "tensor/kernels/reference/reference_backend.h"
#include "tensor/kernels/reference/typed.h"
#include "tensor/layout.h"

namespace dtrain {
namespace {

double load_as_double(const void* p, DType t, std::int64_t i) {
  switch (t) {
    case DType::kF32: return static_cast<const float*>(p)[i];
    case DType::kF64: return static_cast<const double*>(p)[i];
    case DType::kF16: return f16_to_f32(static_cast<const std::uint16_t*>(p)[i]);
    case DType::kBF16: return bf16_to_f32(static_cast<const std::uint16_t*>(p)[i]);
    case DType::kI32: return static_cast<const std::int32_t*>(p)[i];
  }
  return 0;
}

void store_from_double(void* p, DType t, std::int64_t i, double v) {
  switch (t) {
    case DType::kF32: static_cast<float*>(p)[i] = static_cast<float>(v); break;
    case DType::kF64: static_cast<double*>(p)[i] = v; break;
    case DType::kF16: static_cast<std::uint16_t*>(p)[i] = f32_to_f16(static_cast<float>(v)); break;
    case DType::kBF16: static_cast<std::uint16_t*>(p)[i] = f32_to_bf16(static_cast<float>(v)); break;
    case DType::kI32: static_cast<std::int32_t*>(p)[i] = static_cast<std::int32_t>(v); break;
  }
}

// Same layout, different dtypes: convert element by element (f32 <-> f16/bf16 in bulk).
void convert_same_layout(const Tensor& src, Tensor& dst) {
  const std::size_t n = static_cast<std::size_t>(src.numel());
  if (src.dtype() == DType::kF32 && dst.dtype() == DType::kF16) {
    return convert_f32_to_f16(src.data<float>(), static_cast<std::uint16_t*>(dst.raw_data()), n);
  }
  if (src.dtype() == DType::kF16 && dst.dtype() == DType::kF32) {
    return convert_f16_to_f32(static_cast<const std::uint16_t*>(src.raw_data()), dst.data<float>(), n);
  }
  if (src.dtype() == DType::kF32 && dst.dtype() == DType::kBF16) {
    return convert_f32_to_bf16(src.data<float>(), static_cast<std::uint16_t*>(dst.raw_data()), n);
  }
  if (src.dtype() == DType::kBF16 && dst.dtype() == DType::kF32) {
    return convert_bf16_to_f32(static_cast<const std::uint16_t*>(src.raw_data()), dst.data<float>(), n);
  }
  if (src.dtype() == DType::kF32 && dst.dtype() == DType::kF64) {
    const float* s = src.data<float>();
    double* d = dst.data<double>();
    for (std::size_t i = 0; i < n; ++i) d[i] = s[i];
    return;
  }
  for (std::int64_t i = 0; i < src.numel(); ++i) {
    store_from_double(dst.raw_data(), dst.dtype(), i, load_as_double(src.raw_data(), src.dtype(), i));
  }
}

}  // namespace

void ReferenceBackend::fill(Tensor& t, double value) {
  for (std::int64_t i = 0; i < t.numel(); ++i) store_from_double(t.raw_data(), t.dtype(), i, value);
}

void ReferenceBackend::copy(const Tensor& src, Tensor& dst) {
  check_same_shape(src, dst, "copy");
  if (src.dtype() == dst.dtype()) return reorder_host(src, dst);
  if (src.layout() == dst.layout()) return convert_same_layout(src, dst);
  Tensor converted = Tensor::empty(src.shape(), dst.dtype(), src.device(), src.layout());
  convert_same_layout(src, converted);
  reorder_host(converted, dst);
}

Tensor ReferenceBackend::add(const Tensor& a, const Tensor& b) {
  check_same_shape(a, b, "add");
  ref::check_same_dtype(a, b, "add");
  const Tensor pa = ref::plain(a), pb = ref::plain(b);
  Tensor out = Tensor::empty(a.shape(), a.dtype());
  ref::visit_float(a.dtype(), [&](auto z) {
    using T = decltype(z);
    const T* x = pa.data<T>();
    const T* y = pb.data<T>();
    T* o = out.data<T>();
    for (std::int64_t i = 0; i < out.numel(); ++i) o[i] = x[i] + y[i];
  });
  return out;
}

void ReferenceBackend::axpy(double alpha, const Tensor& x, Tensor& y) {
  check_same_shape(x, y, "axpy");
  const Tensor px = x.to_layout(y.layout()).to(y.dtype());
  ref::visit_float(y.dtype(), [&](auto z) {
    using T = decltype(z);
    const T* s = px.data<T>();
    T* d = y.data<T>();
    for (std::int64_t i = 0; i < y.numel(); ++i) d[i] += static_cast<T>(alpha) * s[i];
  });
}

void ReferenceBackend::scale(Tensor& t, double alpha) {
  ref::visit_float(t.dtype(), [&](auto z) {
    using T = decltype(z);
    T* d = t.data<T>();
    for (std::int64_t i = 0; i < t.numel(); ++i) d[i] *= static_cast<T>(alpha);
  });
}

Tensor ReferenceBackend::mul(const Tensor& a, const Tensor& b) {
  check_same_shape(a, b, "mul");
  ref::check_same_dtype(a, b, "mul");
  const Tensor pa = ref::plain(a), pb = ref::plain(b);
  Tensor out = Tensor::empty(a.shape(), a.dtype());
  ref::visit_float(a.dtype(), [&](auto z) {
    using T = decltype(z);
    const T* x = pa.data<T>();
    const T* y = pb.data<T>();
    T* o = out.data<T>();
    for (std::int64_t i = 0; i < out.numel(); ++i) o[i] = x[i] * y[i];
  });
  return out;
}

Tensor ReferenceBackend::relu_forward(const Tensor& x) {
  const Tensor px = ref::plain(x);
  Tensor out = Tensor::empty(x.shape(), x.dtype());
  ref::visit_float(x.dtype(), [&](auto z) {
    using T = decltype(z);
    const T* s = px.data<T>();
    T* o = out.data<T>();
    for (std::int64_t i = 0; i < out.numel(); ++i) o[i] = s[i] > T(0) ? s[i] : T(0);
  });
  return out;
}

Tensor ReferenceBackend::relu_backward(const Tensor& y, const Tensor& dy) {
  check_same_shape(y, dy, "relu_backward");
  const Tensor py = ref::plain(y), pdy = ref::plain(dy);
  Tensor out = Tensor::empty(y.shape(), y.dtype());
  ref::visit_float(y.dtype(), [&](auto z) {
    using T = decltype(z);
    const T* s = py.data<T>();
    const T* g = pdy.data<T>();
    T* o = out.data<T>();
    for (std::int64_t i = 0; i < out.numel(); ++i) o[i] = s[i] > T(0) ? g[i] : T(0);
  });
  return out;
}

double counter_uniform(std::uint64_t seed, std::uint64_t index) {
  std::uint64_t z = seed * 0x9e3779b97f4a7c15ull + index + 0x632be59bd9b4e019ull;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  z ^= z >> 31;
  return static_cast<double>(z >> 11) * 0x1.0p-53;
}

Tensor ReferenceBackend::dropout_mask(const Shape& shape, double keep_prob, std::uint64_t seed) {
  DT_CHECK(keep_prob > 0 && keep_prob <= 1, "keep probability {} outside (0, 1]", keep_prob);
  Tensor mask = Tensor::empty(shape, DType::kF32);
  float* m = mask.data<float>();
  const float kept = static_cast<float>(1.0 / keep_prob);
  for (std::int64_t i = 0; i < mask.numel(); ++i) {
    m[i] = counter_uniform(seed, static_cast<std::uint64_t>(i)) < keep_prob ? kept : 0.0f;
  }
  return mask;
}

double ReferenceBackend::sum(const Tensor& x) {
  const Tensor px = ref::plain(x).to(DType::kF64);
  double s = 0;
  for (std::int64_t i = 0; i < px.numel(); ++i) s += px.data<double>()[i];
  return s;
}

double ReferenceBackend::sum_of_squares(const Tensor& x) {
  const Tensor px = ref::plain(x).to(DType::kF64);
  double s = 0;
  for (std::int64_t i = 0; i < px.numel(); ++i) s += px.data<double>()[i] * px.data<double>()[i];
  return s;
}

bool ReferenceBackend::all_finite(const Tensor& x) {
  const Tensor px = ref::plain(x).to(DType::kF64);
  for (std::int64_t i = 0; i < px.numel(); ++i) {
    if (!std::isfinite(px.data<double>()[i])) return false;
  }
  return true;
}

Backend& reference_backend() {
  static ReferenceBackend backend;
  return backend;
}

}  // namespace dtrain
