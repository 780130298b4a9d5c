// LAMB (You et al. 2019, arXiv 1904.00962, "Large Batch Optimization for Deep Learning"): Adam's
// direction with weight decay, scaled per parameter tensor by a trust ratio:
//   m = b1*m + (1-b1)*g;  v = b2*v + (1-b2)*g^2;  m^ = m/(1-b1^t), v^ = v/(1-b2^t)
//   r = m^ / (sqrt(v^) + eps) + wd*w
//   w -= lr * (||w|| / ||r||) * r                  (ratio 1 where ||w|| or ||r|| is 0)
// with phi the identity (no clamp) and bias correction (the paper's first versions; v3 drops it:
// cybertronai/pytorch-lamb's note). As LARS (optim/lars.h), one-dimensional parameters are neither
// adapted nor decayed unless adapt_all.
#pragma once

#include "optim/optimizer.h"

namespace dtrain {

struct LambHyper {
  double lr = 1e-3, beta1 = 0.9, beta2 = 0.999, eps = 1e-6, weight_decay = 0.0;
  bool adapt_all = false;
};

class Lamb : public Optimizer {
 public:
  Lamb(std::vector<Variable> params, const LambHyper& h) : Optimizer(std::move(params), h.lr), hyper_(h) {}
  bool layerwise() const override { return true; }
  std::string name() const override { return "lamb"; }

 protected:
  void update(Tensor& w, const Tensor& g, std::span<Tensor> state) override;
  // Updates m and v, keeps r; returns ||w||^2 and ||r||^2 of the part.
  NormSums norm_sums(Tensor& w, const Tensor& g, std::span<Tensor> state) override;
  void apply_with_norms(Tensor& w, const Tensor& g, std::span<Tensor> state, NormSums whole) override;
  std::vector<std::string> slot_names() const override { return {"exp_avg", "exp_avg_sq"}; }

 private:
  LambHyper hyper_;
  // r between the two halves: one buffer reused across parameters for a whole update, one per
  // parameter for a split step (every part's norms are summed before any part is updated).
  std::vector<float>& direction_buffer();
  bool whole_ = false;
  std::vector<float> whole_direction_;
  std::vector<std::vector<float>> part_directions_;
};

}  // namespace dtrain
