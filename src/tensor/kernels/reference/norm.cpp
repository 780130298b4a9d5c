// Reference batch normalisation (Ioffe & Szegedy 2015) over (N, H, W) for each channel:
//   y = gamma * (x - mean) / sqrt(var + eps) + beta, var biased (divided by M = N*H*W).
// Backward with xhat = (x - mean) / sqrt(var + eps), g = dy * gamma:
//   dx = (g - mean(g) - xhat * mean(g * xhat)) / sqrt(var + eps)
//   dgamma = sum(dy * xhat),  dbeta = sum(dy)
#include <cmath>

#include "tensor/kernels/reference/reference_backend.h"
#include "tensor/kernels/reference/typed.h"

namespace dtrain {
// The naive loops nest one per line without braces, as the sums they compute are written.
// NOLINTBEGIN(readability-braces-around-statements)
namespace {

struct NormDims {
  std::int64_t N, C, S;  // S = spatial size (H*W, or 1 for [N, C])
};

NormDims norm_dims(const Shape& x, const Tensor& gamma) {
  if ((x.rank() != 2 && x.rank() != 4) || gamma.numel() != x[1]) {
    throw ShapeError(fmt::format("batch_norm: input {} does not fit {} channel parameters", x, gamma.numel()));
  }
  return {x[0], x[1], x.rank() == 4 ? x[2] * x[3] : 1};
}

}  // namespace

BatchNormForward ReferenceBackend::batch_norm_forward_training(const Tensor& x_in, const Tensor& gamma,
                                                               const Tensor& beta, double eps) {
  const Tensor x = ref::plain(x_in);
  const NormDims d = norm_dims(x.shape(), gamma);
  BatchNormForward out{Tensor::empty(x.shape(), x.dtype()), Tensor::empty({d.C}, x.dtype()),
                       Tensor::empty({d.C}, x.dtype())};
  ref::visit_float(x.dtype(), [&](auto z) {
    using T = decltype(z);
    const T* px = x.data<T>();
    T* py = out.y.data<T>();
    const double M = static_cast<double>(d.N * d.S);
    for (std::int64_t c = 0; c < d.C; ++c) {
      double s = 0;
      for (std::int64_t n = 0; n < d.N; ++n)
        for (std::int64_t k = 0; k < d.S; ++k) s += px[(n * d.C + c) * d.S + k];
      const double mean = s / M;
      double ss = 0;
      for (std::int64_t n = 0; n < d.N; ++n)
        for (std::int64_t k = 0; k < d.S; ++k) {
          const double v = px[(n * d.C + c) * d.S + k] - mean;
          ss += v * v;
        }
      const double var = ss / M;
      const double inv = 1.0 / std::sqrt(var + eps);
      const double gm = gamma.data<T>()[c], bt = beta.data<T>()[c];
      for (std::int64_t n = 0; n < d.N; ++n)
        for (std::int64_t k = 0; k < d.S; ++k) {
          const std::int64_t i = (n * d.C + c) * d.S + k;
          py[i] = static_cast<T>(gm * (px[i] - mean) * inv + bt);
        }
      out.mean.data<T>()[c] = static_cast<T>(mean);
      out.var.data<T>()[c] = static_cast<T>(var);
    }
  });
  out.y = out.y.to_layout(x_in.layout());
  return out;
}

Tensor ReferenceBackend::batch_norm_forward_inference(const Tensor& x_in, const Tensor& gamma, const Tensor& beta,
                                                      const Tensor& mean, const Tensor& var, double eps) {
  const Tensor x = ref::plain(x_in);
  const NormDims d = norm_dims(x.shape(), gamma);
  Tensor y = Tensor::empty(x.shape(), x.dtype());
  ref::visit_float(x.dtype(), [&](auto z) {
    using T = decltype(z);
    for (std::int64_t c = 0; c < d.C; ++c) {
      const double inv = 1.0 / std::sqrt(static_cast<double>(var.data<T>()[c]) + eps);
      const double gm = gamma.data<T>()[c], bt = beta.data<T>()[c], mu = mean.data<T>()[c];
      for (std::int64_t n = 0; n < d.N; ++n)
        for (std::int64_t k = 0; k < d.S; ++k) {
          const std::int64_t i = (n * d.C + c) * d.S + k;
          y.data<T>()[i] = static_cast<T>(gm * (x.data<T>()[i] - mu) * inv + bt);
        }
    }
  });
  return y.to_layout(x_in.layout());
}

BatchNormGrads ReferenceBackend::batch_norm_backward(const Tensor& dy_in, const Tensor& x_in, const Tensor& gamma,
                                                     const Tensor& mean, const Tensor& var, double eps) {
  const Tensor x = ref::plain(x_in), dy = ref::plain(dy_in);
  const NormDims d = norm_dims(x.shape(), gamma);
  BatchNormGrads out{Tensor::empty(x.shape(), x.dtype()), Tensor::empty({d.C}, x.dtype()),
                     Tensor::empty({d.C}, x.dtype())};
  ref::visit_float(x.dtype(), [&](auto z) {
    using T = decltype(z);
    const T* px = x.data<T>();
    const T* pg = dy.data<T>();
    T* pdx = out.dx.data<T>();
    const double M = static_cast<double>(d.N * d.S);
    for (std::int64_t c = 0; c < d.C; ++c) {
      const double mu = mean.data<T>()[c];
      const double inv = 1.0 / std::sqrt(static_cast<double>(var.data<T>()[c]) + eps);
      double sum_dy = 0, sum_dy_xhat = 0;
      for (std::int64_t n = 0; n < d.N; ++n)
        for (std::int64_t k = 0; k < d.S; ++k) {
          const std::int64_t i = (n * d.C + c) * d.S + k;
          sum_dy += pg[i];
          sum_dy_xhat += pg[i] * (px[i] - mu) * inv;
        }
      const double gm = gamma.data<T>()[c];
      for (std::int64_t n = 0; n < d.N; ++n)
        for (std::int64_t k = 0; k < d.S; ++k) {
          const std::int64_t i = (n * d.C + c) * d.S + k;
          const double xhat = (px[i] - mu) * inv;
          pdx[i] = static_cast<T>(gm * inv * (pg[i] - sum_dy / M - xhat * sum_dy_xhat / M));
        }
      out.dgamma.data<T>()[c] = static_cast<T>(sum_dy_xhat);
      out.dbeta.data<T>()[c] = static_cast<T>(sum_dy);
    }
  });
  out.dx = out.dx.to_layout(x_in.layout());
  return out;
}

// NOLINTEND(readability-braces-around-statements)
}  // namespace dtrain
