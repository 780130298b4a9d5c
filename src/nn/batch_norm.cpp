#include "nn/batch_norm.h"

namespace dtrain {

BatchNorm::BatchNorm(std::int64_t channels, double eps, double momentum) : Module("batch_norm"), channels_(channels) {
  weight_ = register_parameter("weight", Tensor::full({channels}, 1.0));
  bias_ = register_parameter("bias", Tensor::zeros({channels}));
  state_.running_mean = Tensor::zeros({channels});
  state_.running_var = Tensor::full({channels}, 1.0);
  state_.eps = eps;
  state_.momentum = momentum;
  register_buffer("running_mean", &state_.running_mean);
  register_buffer("running_var", &state_.running_var);
}

Variable BatchNorm::forward(const Variable& x) {
  if ((x.data().dim() != 2 && x.data().dim() != 4) || x.shape()[1] != channels_) {
    throw ShapeError(fmt::format("BatchNorm({}) got input {}; expected [N, {}] or [N, {}, H, W]", channels_, x.shape(),
                                 channels_, channels_));
  }
  return ops::batch_norm(x, weight_, bias_, state_, training());
}

std::vector<BatchNorm*> batch_norms(Module& model) {
  std::vector<BatchNorm*> out;
  for (const auto& [path, m] : model.named_modules()) {
    // named_modules lists the tree of `model`, which the caller holds as non-const.
    if (const auto* bn = dynamic_cast<const BatchNorm*>(m)) out.push_back(const_cast<BatchNorm*>(bn));
  }
  return out;
}

}  // namespace dtrain
