// The fast CPU backend: oneDNN primitives (convolution, pooling, batch norm; activations kept in
// nChw16c), oneDNN's sgemm for linear layers, and OpenMP loops for elementwise work. Kernels it
// does not override run on the reference implementation it derives from.
#pragma once

#include "tensor/kernels/reference/reference_backend.h"

namespace dtrain {

class CpuBackend : public ReferenceBackend {
 public:
  std::string_view name() const override { return "cpu"; }

  void fill(Tensor& t, double value) override;
  void copy(const Tensor& src, Tensor& dst) override;
  Tensor add(const Tensor& a, const Tensor& b) override;
  void axpy(double alpha, const Tensor& x, Tensor& y) override;
  void scale(Tensor& t, double alpha) override;
};

Backend& cpu_backend();

}  // namespace dtrain
