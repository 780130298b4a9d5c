// A chain of modules, named "0", "1", ... as in PyTorch's nn.Sequential.
#pragma once

#include "nn/module.h"

namespace dtrain {

class Sequential : public Module {
 public:
  Sequential() : Module("sequential") {}
  // A chain that names its own type (a model: "resnet20").
  explicit Sequential(std::string type) : Module(std::move(type)) {}
  Sequential& add(std::shared_ptr<Module> m);
  // Named child (the reference models name their layers, e.g. "c1", "f1").
  Sequential& add(std::string name, std::shared_ptr<Module> m);
  Variable forward(const Variable& x) override;
  std::size_t size() const { return layers_.size(); }
  // The i-th layer and its name (pipeline stages are built from ranges of them).
  const std::shared_ptr<Module>& layer(std::size_t i) const { return layers_.at(i); }
  const std::string& layer_name(std::size_t i) const { return names_.at(i); }

 private:
  std::vector<std::shared_ptr<Module>> layers_;
  std::vector<std::string> names_;
};

}  // namespace dtrain
