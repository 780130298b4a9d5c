// CIFAR ResNets (He et al. 2016, section 4.2): a 3x3 conv to 16 channels, three stages of n basic
// blocks at 16, 32 and 64 channels (the first block of stages 2 and 3 strides by 2), global
// average pooling and a linear classifier: 6n+2 layers.
#include "nn/activation.h"
#include "nn/batch_norm.h"
#include "nn/conv2d.h"
#include "nn/linear.h"
#include "nn/models/models.h"
#include "nn/residual.h"
#include "nn/sequential.h"

namespace dtrain {
namespace {

// A chain of layers in forward order (a Sequential, so a pipeline can split it between blocks),
// its children named as before: "c", "b", "relu", "layers.0".."layers.{3n-1}", "pool", "flatten",
// "fc", which keeps every parameter's name ("layers.3.c1.weight").
class ResNet : public Sequential {
 public:
  ResNet(int n, const ModelInput& in, Rng& rng) : Sequential(fmt::format("resnet{}", 6 * n + 2)) {
    add("c", std::make_shared<Conv2d>(in.channels, 16, 3, 1, 1, false, rng));
    add("b", std::make_shared<BatchNorm>(16));
    add("relu", std::make_shared<ReLU>());
    std::int64_t channels = 16;
    int block = 0;
    for (auto [out, stride] : {std::pair<std::int64_t, std::int64_t>{16, 1}, {32, 2}, {64, 2}}) {
      for (int i = 0; i < n; ++i) {
        add(fmt::format("layers.{}", block++), std::make_shared<BasicBlock>(channels, out, i == 0 ? stride : 1, rng));
        channels = out;
      }
    }
    add("pool", global_avg_pool());
    add("flatten", std::make_shared<Flatten>());
    add("fc", std::make_shared<Linear>(64, in.classes, true, rng));
  }
};

}  // namespace

std::shared_ptr<Module> make_resnet(int n, const ModelInput& in, Rng& rng) {
  return std::make_shared<ResNet>(n, in, rng);
}

}  // namespace dtrain
