#include "optim/lars.h"

#include <cmath>

#include "core/error.h"

namespace dtrain {

bool layerwise_adapts(const Variable& p, bool adapt_all) { return adapt_all || p.data().shape().rank() >= 2; }

double squared_l2_norm(const Tensor& t) {
  DT_CHECK(t.dtype() == DType::kF32, "l2_norm of {}", t.describe());
  const float* x = t.data<float>();
  double sum = 0;
  for (std::int64_t i = 0; i < t.numel(); ++i) sum += static_cast<double>(x[i]) * x[i];
  return sum;
}

double l2_norm(const Tensor& t) { return std::sqrt(squared_l2_norm(t)); }

double Lars::trust_ratio(double wn, double gn, double wd, double trust_coefficient) {
  if (wn == 0 || gn == 0) return 1.0;
  return trust_coefficient * wn / (gn + wd * wn);
}

double Lars::trust_ratio(const Tensor& w, const Tensor& g, double wd, double trust_coefficient) {
  return trust_ratio(l2_norm(w), l2_norm(g), wd, trust_coefficient);
}

void Lars::update(Tensor& w, const Tensor& g_in, std::span<Tensor> state) {
  const Tensor g = g_in.to_layout(w.layout());
  apply_with_norms(w, g, state, norm_sums(w, g, state));
}

Optimizer::NormSums Lars::norm_sums(Tensor& w, const Tensor& g, std::span<Tensor>) {
  DT_CHECK(w.dtype() == DType::kF32 && w.device().type == DeviceType::kCPU, "lars updates CPU f32 parameters, not {}",
           w.describe());
  return {squared_l2_norm(w), squared_l2_norm(g)};
}

void Lars::apply_with_norms(Tensor& w, const Tensor& g, std::span<Tensor> state, NormSums whole) {
  const bool adapt = layerwise_adapts(params()[current_param()], hyper_.adapt_all);
  const double wd = adapt ? hyper_.weight_decay : 0.0;
  const double ratio =
      adapt ? trust_ratio(std::sqrt(whole.first), std::sqrt(whole.second), wd, hyper_.trust_coefficient) : 1.0;
  const double step = lr() * ratio;
  const double mu = hyper_.momentum;
  float* pw = w.data<float>();
  float* pv = state[0].data<float>();
  const float* pg = g.data<float>();
  for (std::int64_t i = 0; i < w.numel(); ++i) {
    const float vn = static_cast<float>(mu * pv[i] - step * (pg[i] + wd * pw[i]));
    pv[i] = vn;
    pw[i] += vn;
  }
}

}  // namespace dtrain
