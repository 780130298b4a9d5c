#include "nn/sequential.h"

namespace dtrain {

Sequential& Sequential::add(std::shared_ptr<Module> m) { return add(std::to_string(layers_.size()), std::move(m)); }

Sequential& Sequential::add(std::string name, std::shared_ptr<Module> m) {
  names_.push_back(name);
  layers_.push_back(register_module(std::move(name), std::move(m)));
  return *this;
}

Variable Sequential::forward(const Variable& x) {
  Variable y = x;
  for (auto& layer : layers_) y = (*layer)(y);
  return y;
}

}  // namespace dtrain
