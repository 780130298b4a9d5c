// W2: conv5x5x32 - relu - maxpool2 - conv5x5x64 - relu - maxpool2 - fc1024 - relu - fc10.
#include "nn/activation.h"
#include "nn/conv2d.h"
#include "nn/linear.h"
#include "nn/models/models.h"
#include "nn/sequential.h"

namespace dtrain {

std::shared_ptr<Module> make_lenet(const ModelInput& in, Rng& rng) {
  auto m = std::make_shared<Sequential>();
  m->add("c1", std::make_shared<Conv2d>(in.channels, 32, 5, 1, 2, true, rng));
  m->add("relu1", std::make_shared<ReLU>());
  m->add("pool1", max_pool(2, 2));
  m->add("c2", std::make_shared<Conv2d>(32, 64, 5, 1, 2, true, rng));
  m->add("relu2", std::make_shared<ReLU>());
  m->add("pool2", max_pool(2, 2));
  m->add("flatten", std::make_shared<Flatten>());
  m->add("f1", std::make_shared<Linear>(64 * (in.height / 4) * (in.width / 4), 1024, true, rng));
  m->add("relu3", std::make_shared<ReLU>());
  m->add("f2", std::make_shared<Linear>(1024, in.classes, true, rng));
  return m;
}

}  // namespace dtrain
