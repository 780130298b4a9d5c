// LARS (You, Gitman and Ginsburg 2017, arXiv 1708.03888): momentum SGD whose step for each
// parameter tensor ("layer") is scaled by a trust ratio, so that no layer moves by more than a
// fixed share of its own norm whatever the batch:
//   d     = g + wd*w
//   ratio = eta * ||w|| / (||g|| + wd*||w||)     (1 where ||w|| or ||g|| is 0)
//   v     = mu*v - lr*ratio*d;   w += v           (lr inside v, as dtrain's sgd: optim/sgd.h)
// eta is the trust coefficient (0.001 in the paper), lr the global rate. Parameters of one
// dimension (biases, batch-norm scales and shifts) are neither adapted (ratio 1) nor decayed unless
// adapt_all, as SimCLR's and timm's LARS exclude them. The ratio of 1 at a zero norm keeps a
// zero-initialised batch-norm scale (Goyal et al.'s zero-gamma) able to move at all.
#pragma once

#include "optim/optimizer.h"

namespace dtrain {

struct LarsHyper {
  double lr = 0.1, momentum = 0.9, weight_decay = 0.0, trust_coefficient = 0.001;
  bool adapt_all = false;
};

class Lars : public Optimizer {
 public:
  Lars(std::vector<Variable> params, const LarsHyper& h) : Optimizer(std::move(params), h.lr), hyper_(h) {}
  bool layerwise() const override { return true; }
  std::string name() const override { return "lars"; }
  // The trust ratio of `w` with gradient `g` and weight decay `wd` (plain f32 tensors).
  static double trust_ratio(const Tensor& w, const Tensor& g, double wd, double trust_coefficient);
  // The same from the norms.
  static double trust_ratio(double w_norm, double g_norm, double wd, double trust_coefficient);

 protected:
  void update(Tensor& w, const Tensor& g, std::span<Tensor> state) override;
  NormSums norm_sums(Tensor& w, const Tensor& g, std::span<Tensor> state) override;  // ||w||^2, ||g||^2
  void apply_with_norms(Tensor& w, const Tensor& g, std::span<Tensor> state, NormSums whole) override;
  std::vector<std::string> slot_names() const override { return {"momentum"}; }

 private:
  LarsHyper hyper_;
};

// Whether a layer-wise optimizer adapts parameter `p`: tensors of two or more dimensions, or
// every tensor with adapt_all.
bool layerwise_adapts(const Variable& p, bool adapt_all);
// The L2 norm of a plain f32 tensor, accumulated in double, and its square.
double l2_norm(const Tensor& t);
double squared_l2_norm(const Tensor& t);

}  // namespace dtrain
