// CIFAR ResNets (He et al. 2016, section 4.2): a 3x3 conv to 16 channels, three stages of n basic
// blocks at 16, 32 and 64 channels (the first block of stages 2 and 3 strides by 2), global
// average pooling and a linear classifier: 6n+2 layers.
#include "nn/activation.h"
#include "nn/batch_norm.h"
#include "nn/conv2d.h"
#include "nn/linear.h"
#include "nn/models/models.h"
#include "nn/residual.h"

namespace dtrain {
namespace {

class ResNet : public Module {
 public:
  ResNet(int n, const ModelInput& in, Rng& rng) : Module(fmt::format("resnet{}", 6 * n + 2)) {
    c_ = register_module("c", std::make_shared<Conv2d>(in.channels, 16, 3, 1, 1, false, rng));
    b_ = register_module("b", std::make_shared<BatchNorm>(16));
    layers_ = register_module("layers", std::make_shared<Sequential>());
    std::int64_t channels = 16;
    for (auto [out, stride] : {std::pair<std::int64_t, std::int64_t>{16, 1}, {32, 2}, {64, 2}}) {
      for (int i = 0; i < n; ++i) {
        layers_->add(std::make_shared<BasicBlock>(channels, out, i == 0 ? stride : 1, rng));
        channels = out;
      }
    }
    relu_ = register_module("relu", std::make_shared<ReLU>());
    pool_ = register_module("pool", global_avg_pool());
    flatten_ = register_module("flatten", std::make_shared<Flatten>());
    fc_ = register_module("fc", std::make_shared<Linear>(64, in.classes, true, rng));
  }

  Variable forward(const Variable& x) override {
    Variable y = (*relu_)((*b_)((*c_)(x)));
    y = (*layers_)(y);
    return (*fc_)((*flatten_)((*pool_)(y)));
  }

 private:
  std::shared_ptr<Conv2d> c_;
  std::shared_ptr<BatchNorm> b_;
  std::shared_ptr<Sequential> layers_;
  std::shared_ptr<ReLU> relu_;
  std::shared_ptr<Pool2d> pool_;
  std::shared_ptr<Flatten> flatten_;
  std::shared_ptr<Linear> fc_;
};

}  // namespace

std::shared_ptr<Module> make_resnet(int n, const ModelInput& in, Rng& rng) {
  return std::make_shared<ResNet>(n, in, rng);
}

}  // namespace dtrain
