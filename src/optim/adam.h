// Adam (Kingma & Ba 2015) with bias-corrected moment estimates.
#pragma once

#include "optim/optimizer.h"
#include "tensor/backend.h"

namespace dtrain {

class Adam : public Optimizer {
 public:
  Adam(std::vector<Variable> params, const AdamHyper& h) : Optimizer(std::move(params), h.lr), hyper_(h) {}
  std::string name() const override { return "adam"; }

 protected:
  void update(Tensor& w, const Tensor& g, std::span<Tensor> state) override {
    AdamHyper h = hyper_;
    h.lr = lr();
    if (!decays_current()) h.weight_decay = 0;
    h.step = steps() + 1;
    dispatch(w).adam_update(w, g, state[0], state[1], h);
  }
  std::vector<std::string> slot_names() const override { return {"exp_avg", "exp_avg_sq"}; }

 private:
  AdamHyper hyper_;
};

}  // namespace dtrain
