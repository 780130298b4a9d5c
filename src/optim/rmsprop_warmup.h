// RMSprop warm-up (Akiba, Suzuki and Fukuda 2017, arXiv 1711.04325): one optimizer that moves from
// RMSprop to momentum SGD over the first epochs, so that a very large batch starts with RMSprop's
// per-element steps and ends with SGD's generalisation. With m and d per element:
//   m = mu2*m + (1 - mu2)*g^2
//   d = mu1*d - (a_sgd + a_rms / (sqrt(m) + eps))*g,   a_rms = (1 - a_sgd)*lr_rmsprop / lr
//   w += lr*d
// (g includes weight decay). The RMSprop share of a step, (1 - a_sgd)*lr_rmsprop*g/(sqrt(m)+eps),
// does not depend on lr; both shares carry the momentum mu1. a_sgd = 1 is momentum SGD in the
// lr-outside form (d = mu1*d - g; w += lr*d), so a changing lr needs no velocity correction.
//
// a_sgd follows the ELU-like transition of the fractional epoch e (centre c, period p):
//   a_sgd = exp(2(e - c)/p) / 2    for e < c
//         = 1/2 + (e - c)/p        for c <= e < c + p/2
//         = 1                      after
// The transcriptions of the paper write the middle branch as 1/2 + 2(e - c)/p, which overshoots
// to 1.5 and makes a_rms negative; the slope 1/p used here is the one that reaches 1 at c + p/2 as
// the paper's text says and keeps the value and the slope continuous at c (docs/large-batch.md).
// Akiba et al. use c = 10, p = 5 for a 90-epoch run: scale them with shorter runs.
#pragma once

#include "optim/optimizer.h"

namespace dtrain {

// a_sgd at fractional epoch `epoch` (in [0, 1]).
double sgd_share(double epoch, double centre, double period);

struct RmspropWarmupHyper {
  double lr = 0.1, momentum = 0.9, alpha = 0.99, eps = 1e-8, weight_decay = 0.0;
  double rmsprop_lr = 3e-4;  // lr_rmsprop: the RMSprop share's own rate
  double centre = 10, period = 5;
};

class RmspropWarmup : public Optimizer {
 public:
  RmspropWarmup(std::vector<Variable> params, const RmspropWarmupHyper& h);
  std::string name() const override { return "rmsprop-warmup"; }

 protected:
  void update(Tensor& w, const Tensor& g, std::span<Tensor> state) override;
  std::vector<std::string> slot_names() const override { return {"momentum", "square_avg"}; }

 private:
  RmspropWarmupHyper hyper_;
};

}  // namespace dtrain
