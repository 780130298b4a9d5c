// Reference pooling. Max pooling treats padding as -inf and records the flat input index of each
// window's first maximum; average pooling divides by the full window, padding included.
#include <limits>

#include "tensor/kernels/geometry.h"
#include "tensor/kernels/reference/reference_backend.h"
#include "tensor/kernels/reference/typed.h"
#include "tensor/layout.h"

namespace dtrain {
PoolForward ReferenceBackend::pool2d_forward(const Tensor& x_in, PoolKind kind, const Pool2dGeometry& g) {
  const Tensor x = ref::plain(x_in);
  const PoolDims d = pool_dims(x.shape(), g);
  PoolForward out{Tensor::empty({d.N, d.C, d.OH, d.OW}, x.dtype()), Tensor()};
  if (kind == PoolKind::kMax) out.workspace = Tensor::empty({d.N, d.C, d.OH, d.OW}, DType::kI32);
  ref::visit_float(x.dtype(), [&](auto z) {
    using T = decltype(z);
    for (std::int64_t nc = 0; nc < d.N * d.C; ++nc) {
      const T* px = x.data<T>() + nc * d.H * d.W;
      T* py = out.y.data<T>() + nc * d.OH * d.OW;
      for (std::int64_t i = 0; i < d.OH; ++i) {
        for (std::int64_t j = 0; j < d.OW; ++j) {
          T best = -std::numeric_limits<T>::infinity();
          std::int32_t arg = -1;
          T total = 0;
          for (std::int64_t p = 0; p < g.kernel_h; ++p) {
            for (std::int64_t q = 0; q < g.kernel_w; ++q) {
              const std::int64_t ih = i * g.stride_h - g.pad_h + p, iw = j * g.stride_w - g.pad_w + q;
              if (ih < 0 || ih >= d.H || iw < 0 || iw >= d.W) continue;
              const T v = px[ih * d.W + iw];
              total += v;
              if (v > best || arg < 0) {
                best = v;
                arg = static_cast<std::int32_t>(ih * d.W + iw);
              }
            }
          }
          if (kind == PoolKind::kMax) {
            py[i * d.OW + j] = best;
            out.workspace.data<std::int32_t>()[nc * d.OH * d.OW + i * d.OW + j] = arg;
          } else {
            py[i * d.OW + j] = total / static_cast<T>(g.kernel_h * g.kernel_w);
          }
        }
      }
    }
  });
  if (x_in.layout() != Layout::kPlain && layout_supports(x_in.layout(), out.y.shape())) {
    out.y = out.y.to_layout(x_in.layout());
  }
  return out;
}

Tensor ReferenceBackend::pool2d_backward(const Tensor& dy_in, const Tensor& x, const PoolForward& fwd, PoolKind kind,
                                         const Pool2dGeometry& g) {
  const Tensor dy = ref::plain(dy_in);
  const PoolDims d = pool_dims(x.shape(), g);
  Tensor dx = Tensor::zeros(x.shape(), dy.dtype());
  Tensor argmax = fwd.workspace;
  if (kind == PoolKind::kMax && (!argmax.defined() || argmax.dtype() != DType::kI32)) {
    argmax = pool2d_forward(x, kind, g).workspace;  // recompute when the forward ran elsewhere
  }
  ref::visit_float(dy.dtype(), [&](auto z) {
    using T = decltype(z);
    for (std::int64_t nc = 0; nc < d.N * d.C; ++nc) {
      T* pdx = dx.data<T>() + nc * d.H * d.W;
      const T* pdy = dy.data<T>() + nc * d.OH * d.OW;
      for (std::int64_t i = 0; i < d.OH; ++i) {
        for (std::int64_t j = 0; j < d.OW; ++j) {
          const T grad = pdy[i * d.OW + j];
          if (kind == PoolKind::kMax) {
            pdx[argmax.data<std::int32_t>()[nc * d.OH * d.OW + i * d.OW + j]] += grad;
            continue;
          }
          const T share = grad / static_cast<T>(g.kernel_h * g.kernel_w);
          for (std::int64_t p = 0; p < g.kernel_h; ++p) {
            for (std::int64_t q = 0; q < g.kernel_w; ++q) {
              const std::int64_t ih = i * g.stride_h - g.pad_h + p, iw = j * g.stride_w - g.pad_w + q;
              if (ih >= 0 && ih < d.H && iw >= 0 && iw < d.W) pdx[ih * d.W + iw] += share;
            }
          }
        }
      }
    }
  });
  return dx.to_layout(x.layout());
}

}  // namespace dtrain
