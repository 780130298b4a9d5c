// The basic residual block of He et al. 2016 (two 3x3 convolutions with batch norm; a 1x1
// convolution with batch norm on the shortcut when the shape changes):
//   y = relu(bn2(conv2(relu(bn1(conv1(x))))) + shortcut(x))
#pragma once

#include "nn/batch_norm.h"
#include "nn/conv2d.h"
#include "nn/sequential.h"

namespace dtrain {

class BasicBlock : public Module {
 public:
  BasicBlock(std::int64_t in_channels, std::int64_t out_channels, std::int64_t stride, Rng& rng);
  Variable forward(const Variable& x) override;
  const Module* residual_branch_norm() const override { return b2_.get(); }

 private:
  std::shared_ptr<Conv2d> c1_, c2_;
  std::shared_ptr<BatchNorm> b1_, b2_;
  std::shared_ptr<Sequential> shortcut_;  // null for the identity
};

}  // namespace dtrain
