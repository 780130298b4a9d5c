// Momentum SGD in Chainer's form: v = mu*v - lr*(g + wd*w); w += v. With Nesterov momentum
// (Sutskever et al. 2013): w += mu*v - lr*(g + wd*w), evaluated after v is updated.
// With a constant learning rate this equals PyTorch's buf = mu*buf + g; w -= lr*buf (v = -lr*buf).
#pragma once

#include "optim/optimizer.h"
#include "tensor/backend.h"

namespace dtrain {

class Sgd : public Optimizer {
 public:
  Sgd(std::vector<Variable> params, const SgdHyper& h) : Optimizer(std::move(params), h.lr), hyper_(h) {}
  std::string name() const override { return "sgd"; }
  double momentum() const { return hyper_.momentum; }

 protected:
  void update(Tensor& w, const Tensor& g, std::span<Tensor> state) override {
    SgdHyper h = hyper_;
    h.lr = lr();
    dispatch(w).sgd_update(w, g, state[0], h);
  }
  std::vector<std::string> slot_names() const override { return {"momentum"}; }

 private:
  SgdHyper hyper_;
};

}  // namespace dtrain
