#include "nn/conv2d.h"

#include "autograd/ops/conv.h"
#include "nn/init.h"

namespace dtrain {

Conv2d::Conv2d(std::int64_t in_channels, std::int64_t out_channels, std::int64_t kernel, std::int64_t stride,
               std::int64_t padding, bool bias, Rng& rng)
    : Module("conv2d"), in_(in_channels), out_(out_channels), kernel_(kernel) {
  geometry_.stride_h = geometry_.stride_w = stride;
  geometry_.pad_h = geometry_.pad_w = padding;
  const std::int64_t fan_in = in_ * kernel * kernel;
  weight_ = register_parameter("weight", init::uniform_fan_in({out_, in_, kernel, kernel}, fan_in, rng));
  if (bias) bias_ = register_parameter("bias", init::uniform_fan_in({out_}, fan_in, rng));
}

Variable Conv2d::forward(const Variable& x) {
  if (x.data().dim() != 4 || x.shape()[1] != in_) {
    throw ShapeError(fmt::format("Conv2d({}, {}, {}) got input {}; expected [N, {}, H, W]", in_, out_, kernel_,
                                 x.shape(), in_));
  }
  return ops::conv2d(x, weight_, bias_, geometry_);
}

}  // namespace dtrain
