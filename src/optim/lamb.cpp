#include "optim/lamb.h"

#include <cmath>

#include "core/error.h"
#include "optim/lars.h"

namespace dtrain {

void Lamb::update(Tensor& w, const Tensor& g_in, std::span<Tensor> state) {
  const Tensor g = g_in.to_layout(w.layout());
  whole_ = true;
  apply_with_norms(w, g, state, norm_sums(w, g, state));
  whole_ = false;
}

std::vector<float>& Lamb::direction_buffer() {
  if (whole_) return whole_direction_;
  part_directions_.resize(params().size());
  return part_directions_[current_param()];
}

Optimizer::NormSums Lamb::norm_sums(Tensor& w, const Tensor& g, std::span<Tensor> state) {
  DT_CHECK(w.dtype() == DType::kF32 && w.device().type == DeviceType::kCPU, "lamb updates CPU f32 parameters, not {}",
           w.describe());
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
  std::vector<float>& direction = direction_buffer();
  direction.resize(n);
  NormSums sums;
  for (std::size_t i = 0; i < n; ++i) {
    const double gi = pg[i];
    pm[i] = static_cast<float>(b1 * pm[i] + (1 - b1) * gi);
    pv[i] = static_cast<float>(b2 * pv[i] + (1 - b2) * gi * gi);
    const double r = (pm[i] / c1) / (std::sqrt(pv[i] / c2) + eps) + wd * pw[i];
    direction[i] = static_cast<float>(r);
    sums.first += static_cast<double>(pw[i]) * pw[i];
    sums.second += r * r;
  }
  return sums;
}

void Lamb::apply_with_norms(Tensor& w, const Tensor&, std::span<Tensor>, NormSums whole) {
  const bool adapt = layerwise_adapts(params()[current_param()], hyper_.adapt_all);
  const double ratio =
      adapt && whole.second > 0 && whole.first > 0 ? std::sqrt(whole.first) / std::sqrt(whole.second) : 1.0;
  const double step = lr() * ratio;
  float* pw = w.data<float>();
  const std::vector<float>& direction = direction_buffer();
  for (std::size_t i = 0; i < direction.size(); ++i) pw[i] -= static_cast<float>(step * direction[i]);
}

}  // namespace dtrain
