// Momentum SGD in Chainer's form: v = mu*v - lr*(g + wd*w); w += v. With Nesterov momentum
// (Sutskever et al. 2013): w += mu*v - lr*(g + wd*w), evaluated after v is updated.
// With a constant learning rate this equals PyTorch's buf = mu*buf + g; w -= lr*buf (v = -lr*buf).
// When the rate changes, the velocity (which holds the old rate) is rescaled first, Goyal et al.
// 2017's momentum correction (section 3, remark 2): v = mu*(lr_t/lr_{t-1})*v - lr_t*(g + wd*w),
// so that the form still equals PyTorch's at every step of a schedule or warmup; without it a
// rising rate is applied late to the history (the velocity keeps the old rate's steps). On by
// default; ratio 1 on the first step and after a rate of 0 (a step at rate 0 zeroes the lr-inside
// velocity, where the lr-outside form keeps its history: the forms differ there).
#pragma once

#include "optim/optimizer.h"
#include "tensor/backend.h"

namespace dtrain {

class Sgd : public Optimizer {
 public:
  Sgd(std::vector<Variable> params, const SgdHyper& h, bool momentum_correction = true)
      : Optimizer(std::move(params), h.lr), hyper_(h), correction_(momentum_correction) {}
  std::string name() const override { return "sgd"; }
  double momentum() const { return hyper_.momentum; }

 protected:
  void update(Tensor& w, const Tensor& g, std::span<Tensor> state) override {
    SgdHyper h = hyper_;
    h.lr = lr();
    if (!decays_current()) h.weight_decay = 0;
    if (correction_ && applied_lr() > 0) h.velocity_scale = lr() / applied_lr();
    dispatch(w).sgd_update(w, g, state[0], h);
  }
  std::vector<std::string> slot_names() const override { return {"momentum"}; }

 private:
  SgdHyper hyper_;
  bool correction_;
};

}  // namespace dtrain
