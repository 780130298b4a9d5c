// Fast CPU elementwise kernels: contiguous loops the compiler vectorises, split over OpenMP
// threads. Operands of equal layout are processed storage order, whatever the layout.
#include <cstring>

#include "tensor/kernels/cpu/cpu_backend.h"
#include "tensor/layout.h"

namespace dtrain {
namespace {

bool is_f32(const Tensor& t) { return t.dtype() == DType::kF32; }

}  // namespace

void CpuBackend::fill(Tensor& t, double value) {
  if (!is_f32(t)) return ReferenceBackend::fill(t, value);
  float* p = t.data<float>();
  const float v = static_cast<float>(value);
  const std::int64_t n = t.numel();
#pragma omp parallel for schedule(static) if (n > (1 << 16))
  for (std::int64_t i = 0; i < n; ++i) p[i] = v;
}

void CpuBackend::copy(const Tensor& src, Tensor& dst) {
  check_same_shape(src, dst, "copy");
  if (src.dtype() == dst.dtype() && src.layout() == dst.layout()) {
    std::memcpy(dst.raw_data(), src.raw_data(), src.nbytes());
    return;
  }
  ReferenceBackend::copy(src, dst);
}

Tensor CpuBackend::add(const Tensor& a, const Tensor& b_in) {
  check_same_shape(a, b_in, "add");
  if (!is_f32(a) || !is_f32(b_in)) return ReferenceBackend::add(a, b_in);
  const Tensor b = b_in.to_layout(a.layout());
  Tensor out = Tensor::empty_like(a);
  const float* x = a.data<float>();
  const float* y = b.data<float>();
  float* o = out.data<float>();
  const std::int64_t n = a.numel();
#pragma omp parallel for schedule(static) if (n > (1 << 16))
  for (std::int64_t i = 0; i < n; ++i) o[i] = x[i] + y[i];
  return out;
}

void CpuBackend::axpy(double alpha, const Tensor& x_in, Tensor& y) {
  check_same_shape(x_in, y, "axpy");
  if (!is_f32(x_in) || !is_f32(y)) return ReferenceBackend::axpy(alpha, x_in, y);
  const Tensor x = x_in.to_layout(y.layout());
  const float* s = x.data<float>();
  float* d = y.data<float>();
  const float a = static_cast<float>(alpha);
  const std::int64_t n = y.numel();
#pragma omp parallel for schedule(static) if (n > (1 << 16))
  for (std::int64_t i = 0; i < n; ++i) d[i] += a * s[i];
}

void CpuBackend::scale(Tensor& t, double alpha) {
  if (!is_f32(t)) return ReferenceBackend::scale(t, alpha);
  float* d = t.data<float>();
  const float a = static_cast<float>(alpha);
  const std::int64_t n = t.numel();
#pragma omp parallel for schedule(static) if (n > (1 << 16))
  for (std::int64_t i = 0; i < n; ++i) d[i] *= a;
}

Backend& cpu_backend() {
  static CpuBackend backend;
  return backend;
}

}  // namespace dtrain
