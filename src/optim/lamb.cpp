#include "optim/lamb.h"

#include <cmath>

#include "core/error.h"
#include "optim/lars.h"

namespace dtrain {

void Lamb::update(Tensor& w, const Tensor& g_in, std::span<Tensor> state) {
  DT_CHECK(w.dtype() == DType::kF32 && w.device().type == DeviceType::kCPU, "lamb updates CPU f32 parameters, not {}",
           w.describe());
  const Tensor g = g_in.to_layout(w.layout());
  const bool adapt = layerwise_adapts(params()[current_param()], hyper_.adapt_all);
  const double wd = adapt ? hyper_.weight_decay : 0.0;
  const auto t = static_cast<double>(steps() + 1);
  const double c1 = 1 - std::pow(hyper_.beta1, t), c2 = 1 - std::pow(hyper_.beta2, t);
  const double b1 = hyper_.beta1, b2 = hyper_.beta2, eps = hyper_.eps;
  float* pw = w.data<float>();
  float* pm = state[0].data<float>();
  float* pv = state[1].data<float>();
  const float* pg = g.data<float>();
  const auto n = static_cast<std::size_t>(w.numel());
  direction_.resize(n);
  double r_sq = 0, w_sq = 0;
  for (std::size_t i = 0; i < n; ++i) {
    const double gi = pg[i];
    pm[i] = static_cast<float>(b1 * pm[i] + (1 - b1) * gi);
    pv[i] = static_cast<float>(b2 * pv[i] + (1 - b2) * gi * gi);
    const double r = (pm[i] / c1) / (std::sqrt(pv[i] / c2) + eps) + wd * pw[i];
    direction_[i] = static_cast<float>(r);
    r_sq += r * r;
    w_sq += static_cast<double>(pw[i]) * pw[i];
  }
  const double ratio = adapt && r_sq > 0 && w_sq > 0 ? std::sqrt(w_sq) / std::sqrt(r_sq) : 1.0;
  const double step = lr() * ratio;
  for (std::size_t i = 0; i < n; ++i) pw[i] -= static_cast<float>(step * direction_[i]);
}

}  // namespace dtrain
