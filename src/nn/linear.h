// Fully connected layer.
#pragma once

#include "nn/module.h"

namespace dtrain {

class Rng;

class Linear : public Module {
 public:
  Linear(std::int64_t in_features, std::int64_t out_features, bool bias, Rng& rng);
  Variable forward(const Variable& x) override;

  std::int64_t in_features() const { return in_; }
  std::int64_t out_features() const { return out_; }
  const Variable& weight() const { return weight_; }
  const Variable& bias() const { return bias_; }

 private:
  std::int64_t in_, out_;
  Variable weight_, bias_;
};

}  // namespace dtrain
