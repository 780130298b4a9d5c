#include "nn/linear.h"

#include "autograd/ops/linear.h"
#include "nn/init.h"

namespace dtrain {

Linear::Linear(std::int64_t in_features, std::int64_t out_features, bool bias, Rng& rng)
    : Module("linear"), in_(in_features), out_(out_features) {
  weight_ = register_parameter("weight", init::uniform_fan_in({out_, in_}, in_, rng));
  if (bias) bias_ = register_parameter("bias", init::uniform_fan_in({out_}, in_, rng));
}

Variable Linear::forward(const Variable& x) {
  if (x.data().dim() != 2 || x.shape()[1] != in_) {
    throw ShapeError(fmt::format("Linear({}, {}) got input {}; expected [N, {}]", in_, out_, x.shape(), in_));
  }
  return ops::linear(x, weight_, bias_);
}

}  // namespace dtrain
