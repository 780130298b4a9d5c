#include "optim/rmsprop_warmup.h"

#include <algorithm>
#include <cmath>

#include "core/error.h"

namespace dtrain {

double sgd_share(double epoch, double centre, double period) {
  double a = 1.0;
  if (epoch < centre) {
    a = 0.5 * std::exp(2 * (epoch - centre) / period);
  } else if (epoch < centre + period / 2) {
    a = 0.5 + (epoch - centre) / period;
  }
  return std::clamp(a, 0.0, 1.0);
}

RmspropWarmup::RmspropWarmup(std::vector<Variable> params, const RmspropWarmupHyper& h)
    : Optimizer(std::move(params), h.lr), hyper_(h) {
  if (!(h.centre > 0)) {
    throw InputError(fmt::format(
        "--transition-centre must be > 0 epochs (Akiba et al.: 10 of 90; scale it with the run), got {}", h.centre));
  }
  if (!(h.period > 0)) {
    throw InputError(fmt::format(
        "--transition-period must be > 0 epochs (Akiba et al.: 5 of 90; scale it with the run), got {}", h.period));
  }
  if (!(h.rmsprop_lr >= 0)) throw InputError(fmt::format("--rmsprop-lr must be >= 0, got {}", h.rmsprop_lr));
  if (h.momentum < 0 || h.momentum >= 1) {
    throw InputError(fmt::format("--momentum must be in [0, 1), got {}", h.momentum));
  }
  if (h.alpha < 0 || h.alpha >= 1) throw InputError(fmt::format("--alpha must be in [0, 1), got {}", h.alpha));
}

void RmspropWarmup::update(Tensor& w, const Tensor& g_in, std::span<Tensor> state) {
  DT_CHECK(w.dtype() == DType::kF32 && w.device().type == DeviceType::kCPU,
           "rmsprop-warmup updates CPU f32 parameters, not {}", w.describe());
  const Tensor g = g_in.to_layout(w.layout());
  const double lr = this->lr();
  const double a_sgd = sgd_share(progress(), hyper_.centre, hyper_.period);
  // At lr = 0 the step lr*d is 0 whatever a_rms is; 0 keeps d finite.
  const auto a_rms = static_cast<float>(lr > 0 ? (1 - a_sgd) * hyper_.rmsprop_lr / lr : 0.0);
  const auto sgd = static_cast<float>(a_sgd), step = static_cast<float>(lr);
  const auto mu1 = static_cast<float>(hyper_.momentum), mu2 = static_cast<float>(hyper_.alpha);
  const auto eps = static_cast<float>(hyper_.eps);
  const auto wd = static_cast<float>(decays_current() ? hyper_.weight_decay : 0.0);
  float* pw = w.data<float>();
  float* pd = state[0].data<float>();
  float* pm = state[1].data<float>();
  const float* pg = g.data<float>();
  for (std::int64_t i = 0; i < w.numel(); ++i) {
    const float gi = pg[i] + wd * pw[i];
    pm[i] = mu2 * pm[i] + (1 - mu2) * gi * gi;
    pd[i] = mu1 * pd[i] - (sgd + a_rms / (std::sqrt(pm[i]) + eps)) * gi;
    pw[i] += step * pd[i];
  }
}

}  // namespace dtrain
