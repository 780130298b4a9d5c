#include "nn/residual.h"

#include "autograd/ops/elementwise.h"

namespace dtrain {

BasicBlock::BasicBlock(std::int64_t in_channels, std::int64_t out_channels, std::int64_t stride, Rng& rng)
    : Module("basic_block") {
  c1_ = register_module("c1", std::make_shared<Conv2d>(in_channels, out_channels, 3, stride, 1, false, rng));
  b1_ = register_module("b1", std::make_shared<BatchNorm>(out_channels));
  c2_ = register_module("c2", std::make_shared<Conv2d>(out_channels, out_channels, 3, 1, 1, false, rng));
  b2_ = register_module("b2", std::make_shared<BatchNorm>(out_channels));
  if (stride != 1 || in_channels != out_channels) {
    auto sc = std::make_shared<Sequential>();
    sc->add(std::make_shared<Conv2d>(in_channels, out_channels, 1, stride, 0, false, rng));
    sc->add(std::make_shared<BatchNorm>(out_channels));
    shortcut_ = register_module("sc", sc);
  }
}

Variable BasicBlock::forward(const Variable& x) {
  Variable o = ops::relu((*b1_)((*c1_)(x)));
  o = (*b2_)((*c2_)(o));
  return ops::relu(ops::add(o, shortcut_ ? (*shortcut_)(x) : x));
}

}  // namespace dtrain
