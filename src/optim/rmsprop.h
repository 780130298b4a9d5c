// RMSprop (Tieleman & Hinton 2012): s = alpha*s + (1-alpha)*g^2; w -= lr*g / (sqrt(s) + eps).
#pragma once

#include "optim/optimizer.h"
#include "tensor/backend.h"

namespace dtrain {

class Rmsprop : public Optimizer {
 public:
  Rmsprop(std::vector<Variable> params, const RmspropHyper& h) : Optimizer(std::move(params), h.lr), hyper_(h) {}
  std::string name() const override { return "rmsprop"; }

 protected:
  void update(Tensor& w, const Tensor& g, std::span<Tensor> state) override {
    RmspropHyper h = hyper_;
    h.lr = lr();
    if (!decays_current()) h.weight_decay = 0;
    dispatch(w).rmsprop_update(w, g, state[0], h);
  }
  std::vector<std::string> slot_names() const override { return {"square_avg"}; }

 private:
  RmspropHyper hyper_;
};

}  // namespace dtrain
