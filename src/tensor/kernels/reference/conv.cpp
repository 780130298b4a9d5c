// Reference 2-D convolution (cross-correlation, as every framework defines it):
// y[n,o,i,j] = b[o] + sum_{c,p,q} x[n, c, i*s_h - pad_h + p, j*s_w - pad_w + q] * w[o,c,p,q]
#include "tensor/kernels/geometry.h"
#include "tensor/kernels/reference/reference_backend.h"
#include "tensor/kernels/reference/typed.h"

namespace dtrain {
// The naive loops nest one per line without braces, as the sums they compute are written.
// NOLINTBEGIN(readability-braces-around-statements)

std::int64_t window_output_size(std::int64_t in, std::int64_t kernel, std::int64_t stride, std::int64_t pad,
                                const char* what) {
  if (stride < 1 || pad < 0 || kernel < 1) {
    throw ShapeError(fmt::format("{}: kernel {}, stride {}, padding {} are not valid", what, kernel, stride, pad));
  }
  const std::int64_t span = in + 2 * pad - kernel;
  if (span < 0) {
    throw ShapeError(fmt::format("{}: window of {} does not fit input extent {} with padding {}", what, kernel, in,
                                 pad));
  }
  return span / stride + 1;
}

namespace {

// Calls f(n, o, c, i, j, p, q, ih, iw) for every tap that falls inside the input.
template <typename F>
void for_each_tap(const ConvDims& d, const Conv2dGeometry& g, F&& f) {
  for (std::int64_t n = 0; n < d.N; ++n)
    for (std::int64_t o = 0; o < d.O; ++o)
      for (std::int64_t i = 0; i < d.OH; ++i)
        for (std::int64_t j = 0; j < d.OW; ++j)
          for (std::int64_t c = 0; c < d.C; ++c)
            for (std::int64_t p = 0; p < d.KH; ++p) {
              const std::int64_t ih = i * g.stride_h - g.pad_h + p;
              if (ih < 0 || ih >= d.H) continue;
              for (std::int64_t q = 0; q < d.KW; ++q) {
                const std::int64_t iw = j * g.stride_w - g.pad_w + q;
                if (iw < 0 || iw >= d.W) continue;
                f(n, o, c, i, j, p, q, ih, iw);
              }
            }
}

}  // namespace

Tensor ReferenceBackend::conv2d_forward(const Tensor& x_in, const Tensor& w, const Tensor* b,
                                        const Conv2dGeometry& g) {
  const Tensor x = ref::plain(x_in);
  const ConvDims d = conv_dims(x.shape(), w.shape(), g);
  Tensor y = Tensor::empty({d.N, d.O, d.OH, d.OW}, x.dtype());
  ref::visit_float(x.dtype(), [&](auto z) {
    using T = decltype(z);
    const T* px = x.data<T>();
    const T* pw = w.data<T>();
    T* py = y.data<T>();
    for (std::int64_t n = 0; n < d.N; ++n)
      for (std::int64_t o = 0; o < d.O; ++o)
        for (std::int64_t k = 0; k < d.OH * d.OW; ++k) py[(n * d.O + o) * d.OH * d.OW + k] = b ? b->data<T>()[o] : T(0);
    for_each_tap(d, g, [&](auto n, auto o, auto c, auto i, auto j, auto p, auto q, auto ih, auto iw) {
      py[((n * d.O + o) * d.OH + i) * d.OW + j] +=
          px[((n * d.C + c) * d.H + ih) * d.W + iw] * pw[((o * d.C + c) * d.KH + p) * d.KW + q];
    });
  });
  return y;
}

Tensor ReferenceBackend::conv2d_backward_data(const Tensor& dy_in, const Tensor& w, const Shape& x_shape,
                                              Layout x_layout, const Conv2dGeometry& g) {
  const Tensor dy = ref::plain(dy_in);
  const ConvDims d = conv_dims(x_shape, w.shape(), g);
  Tensor dx = Tensor::zeros(x_shape, dy.dtype());
  ref::visit_float(dy.dtype(), [&](auto z) {
    using T = decltype(z);
    const T* pdy = dy.data<T>();
    const T* pw = w.data<T>();
    T* pdx = dx.data<T>();
    for_each_tap(d, g, [&](auto n, auto o, auto c, auto i, auto j, auto p, auto q, auto ih, auto iw) {
      pdx[((n * d.C + c) * d.H + ih) * d.W + iw] +=
          pdy[((n * d.O + o) * d.OH + i) * d.OW + j] * pw[((o * d.C + c) * d.KH + p) * d.KW + q];
    });
  });
  return dx.to_layout(x_layout);
}

WeightGrads ReferenceBackend::conv2d_backward_weights(const Tensor& dy_in, const Tensor& x_in, const Shape& w_shape,
                                                      bool with_bias, const Conv2dGeometry& g) {
  const Tensor dy = ref::plain(dy_in), x = ref::plain(x_in);
  const ConvDims d = conv_dims(x.shape(), w_shape, g);
  WeightGrads out{Tensor::zeros(w_shape, x.dtype()), with_bias ? Tensor::zeros({d.O}, x.dtype()) : Tensor()};
  ref::visit_float(x.dtype(), [&](auto z) {
    using T = decltype(z);
    const T* pdy = dy.data<T>();
    const T* px = x.data<T>();
    T* pdw = out.dw.template data<T>();
    for_each_tap(d, g, [&](auto n, auto o, auto c, auto i, auto j, auto p, auto q, auto ih, auto iw) {
      pdw[((o * d.C + c) * d.KH + p) * d.KW + q] +=
          pdy[((n * d.O + o) * d.OH + i) * d.OW + j] * px[((n * d.C + c) * d.H + ih) * d.W + iw];
    });
    if (with_bias) {
      T* pdb = out.db.template data<T>();
      for (std::int64_t n = 0; n < d.N; ++n)
        for (std::int64_t o = 0; o < d.O; ++o)
          for (std::int64_t k = 0; k < d.OH * d.OW; ++k) pdb[o] += pdy[(n * d.O + o) * d.OH * d.OW + k];
    }
  });
  return out;
}

// NOLINTEND(readability-braces-around-statements)
}  // namespace dtrain
