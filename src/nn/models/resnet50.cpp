// ResNet-50 for ImageNet (He et al. 2016, table 1), with torchvision's structure and parameter
// names so checkpoints and layer lists line up with the published runs the performance model
// reproduces: a 7x7/2 convolution to 64 channels, 3x3/2 max pooling, four stages of 3, 4, 6 and 3
// bottleneck blocks (1x1 reduce, 3x3, 1x1 expand by 4; the 3x3 carries the stride, "ResNet v1.5"),
// global average pooling and a linear classifier. 25,557,032 parameters for 1000 classes.
#include "autograd/ops/elementwise.h"
#include "nn/activation.h"
#include "nn/batch_norm.h"
#include "nn/conv2d.h"
#include "nn/linear.h"
#include "nn/models/models.h"
#include "nn/sequential.h"

namespace dtrain {
namespace {

// The residual addition as a parameter-free layer, so the layer list (nn/summary.h) and the
// performance model see its memory traffic: forward(y) = y + the shortcut handed over just before.
class ResidualAdd : public Module {
 public:
  ResidualAdd() : Module("add") {}
  void set_shortcut(Variable shortcut) { shortcut_ = std::move(shortcut); }
  Variable forward(const Variable& x) override {
    Variable shortcut = std::move(shortcut_);  // not kept past the call
    return ops::add(x, shortcut);
  }

 private:
  Variable shortcut_;
};

// y = relu(bn3(conv3(relu(bn2(conv2(relu(bn1(conv1(x))))))) + downsample(x)); one ReLU module
// called three times, as torchvision's Bottleneck does.
class Bottleneck : public Module {
 public:
  static constexpr std::int64_t kExpansion = 4;

  Bottleneck(std::int64_t in_channels, std::int64_t planes, std::int64_t stride, Rng& rng) : Module("bottleneck") {
    const std::int64_t out = planes * kExpansion;
    conv1_ = register_module("conv1", std::make_shared<Conv2d>(in_channels, planes, 1, 1, 0, false, rng));
    bn1_ = register_module("bn1", std::make_shared<BatchNorm>(planes));
    conv2_ = register_module("conv2", std::make_shared<Conv2d>(planes, planes, 3, stride, 1, false, rng));
    bn2_ = register_module("bn2", std::make_shared<BatchNorm>(planes));
    conv3_ = register_module("conv3", std::make_shared<Conv2d>(planes, out, 1, 1, 0, false, rng));
    bn3_ = register_module("bn3", std::make_shared<BatchNorm>(out));
    relu_ = register_module("relu", std::make_shared<ReLU>());
    add_ = register_module("add", std::make_shared<ResidualAdd>());
    if (stride != 1 || in_channels != out) {
      auto ds = std::make_shared<Sequential>();
      ds->add(std::make_shared<Conv2d>(in_channels, out, 1, stride, 0, false, rng));
      ds->add(std::make_shared<BatchNorm>(out));
      downsample_ = register_module("downsample", ds);
    }
  }

  Variable forward(const Variable& x) override {
    Variable o = (*relu_)((*bn1_)((*conv1_)(x)));
    o = (*relu_)((*bn2_)((*conv2_)(o)));
    o = (*bn3_)((*conv3_)(o));
    add_->set_shortcut(downsample_ ? (*downsample_)(x) : x);
    return (*relu_)((*add_)(o));
  }
  const Module* residual_branch_norm() const override { return bn3_.get(); }

 private:
  std::shared_ptr<Conv2d> conv1_, conv2_, conv3_;
  std::shared_ptr<BatchNorm> bn1_, bn2_, bn3_;
  std::shared_ptr<ReLU> relu_;
  std::shared_ptr<ResidualAdd> add_;
  std::shared_ptr<Sequential> downsample_;  // null for the identity
};

class ResNet50 : public Module {
 public:
  ResNet50(const ModelInput& in, Rng& rng) : Module("resnet50") {
    conv1_ = register_module("conv1", std::make_shared<Conv2d>(in.channels, 64, 7, 2, 3, false, rng));
    bn1_ = register_module("bn1", std::make_shared<BatchNorm>(64));
    relu_ = register_module("relu", std::make_shared<ReLU>());
    maxpool_ = register_module("maxpool", std::make_shared<Pool2d>(PoolKind::kMax, 3, 2, 1));
    std::int64_t channels = 64;
    const std::int64_t blocks[] = {3, 4, 6, 3};
    for (int stage = 0; stage < 4; ++stage) {
      const std::int64_t planes = std::int64_t{64} << stage;
      auto layer = std::make_shared<Sequential>();
      for (std::int64_t i = 0; i < blocks[stage]; ++i) {
        layer->add(std::make_shared<Bottleneck>(channels, planes, i == 0 && stage > 0 ? 2 : 1, rng));
        channels = planes * Bottleneck::kExpansion;
      }
      stages_.push_back(register_module(fmt::format("layer{}", stage + 1), layer));
    }
    avgpool_ = register_module("avgpool", global_avg_pool());
    flatten_ = register_module("flatten", std::make_shared<Flatten>());
    fc_ = register_module("fc", std::make_shared<Linear>(channels, in.classes, true, rng));
  }

  Variable forward(const Variable& x) override {
    Variable y = (*maxpool_)((*relu_)((*bn1_)((*conv1_)(x))));
    for (const auto& stage : stages_) y = (*stage)(y);
    return (*fc_)((*flatten_)((*avgpool_)(y)));
  }

 private:
  std::shared_ptr<Conv2d> conv1_;
  std::shared_ptr<BatchNorm> bn1_;
  std::shared_ptr<ReLU> relu_;
  std::shared_ptr<Pool2d> maxpool_;
  std::vector<std::shared_ptr<Sequential>> stages_;
  std::shared_ptr<Pool2d> avgpool_;
  std::shared_ptr<Flatten> flatten_;
  std::shared_ptr<Linear> fc_;
};

}  // namespace

std::shared_ptr<Module> make_resnet50(const ModelInput& input, Rng& rng) {
  return std::make_shared<ResNet50>(input, rng);
}

}  // namespace dtrain
