// W1: 784-512-512-10 multilayer perceptron (for 1x28x28 input).
#include "nn/activation.h"
#include "nn/linear.h"
#include "nn/models/models.h"
#include "nn/sequential.h"

namespace dtrain {

std::shared_ptr<Module> make_mlp(const ModelInput& in, Rng& rng) {
  auto m = std::make_shared<Sequential>();
  m->add("flatten", std::make_shared<Flatten>());
  m->add("f1", std::make_shared<Linear>(in.channels * in.height * in.width, 512, true, rng));
  m->add("relu1", std::make_shared<ReLU>());
  m->add("f2", std::make_shared<Linear>(512, 512, true, rng));
  m->add("relu2", std::make_shared<ReLU>());
  m->add("f3", std::make_shared<Linear>(512, in.classes, true, rng));
  return m;
}

}  // namespace dtrain
