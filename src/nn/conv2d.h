// 2-D convolution layer.
#pragma once

#include "nn/module.h"
#include "tensor/backend.h"

namespace dtrain {

class Rng;

class Conv2d : public Module {
 public:
  Conv2d(std::int64_t in_channels, std::int64_t out_channels, std::int64_t kernel, std::int64_t stride,
         std::int64_t padding, bool bias, Rng& rng);
  Variable forward(const Variable& x) override;

  std::int64_t in_channels() const { return in_; }
  std::int64_t out_channels() const { return out_; }
  std::int64_t kernel() const { return kernel_; }
  const Conv2dGeometry& geometry() const { return geometry_; }
  const Variable& weight() const { return weight_; }
  const Variable& bias() const { return bias_; }  // undefined without a bias

 private:
  std::int64_t in_, out_, kernel_;
  Conv2dGeometry geometry_;
  Variable weight_, bias_;
};

}  // namespace dtrain
