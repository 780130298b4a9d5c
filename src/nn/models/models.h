// The model zoo. W1 "mlp", W2 "lenet" and W3 "resnet20" are layer for layer the reference
// workloads of shared/peers/models.py (same parameter names, shapes and counts); "resnet32" and
// "resnet56" are the deeper CIFAR ResNets of He et al. 2016 (6n+2 layers, n = 5 and 9).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "core/random.h"
#include "nn/module.h"

namespace dtrain {

struct ModelInput {
  std::int64_t channels = 1, height = 28, width = 28;
  std::int64_t classes = 10;
};

// Throws InputError listing the valid names for an unknown model.
std::shared_ptr<Module> make_model(const std::string& name, const ModelInput& input, Rng& rng);
const std::vector<std::string>& model_names();

std::shared_ptr<Module> make_mlp(const ModelInput& input, Rng& rng);
std::shared_ptr<Module> make_lenet(const ModelInput& input, Rng& rng);
// CIFAR-style ResNet with 6n+2 layers (n = 3: ResNet-20).
std::shared_ptr<Module> make_resnet(int n, const ModelInput& input, Rng& rng);
// ImageNet ResNet-50 with bottleneck blocks, torchvision structure and names (resnet50.cpp).
std::shared_ptr<Module> make_resnet50(const ModelInput& input, Rng& rng);

}  // namespace dtrain
