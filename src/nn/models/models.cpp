#include "nn/models/models.h"

#include "core/error.h"

namespace dtrain {

const std::vector<std::string>& model_names() {
  static const std::vector<std::string> names{"mlp", "lenet", "resnet20", "resnet32", "resnet56", "resnet50"};
  return names;
}

std::shared_ptr<Module> make_model(const std::string& name, const ModelInput& input, Rng& rng) {
  if (input.channels < 1 || input.height < 1 || input.width < 1 || input.classes < 2) {
    throw InputError(fmt::format("model input {}x{}x{} with {} classes is not valid", input.channels, input.height,
                                 input.width, input.classes));
  }
  if (name == "mlp") return make_mlp(input, rng);
  if (name == "lenet") {
    if (input.height < 4 || input.width < 4) throw InputError("lenet needs images of at least 4x4 pixels");
    return make_lenet(input, rng);
  }
  if (name == "resnet20") return make_resnet(3, input, rng);
  if (name == "resnet32") return make_resnet(5, input, rng);
  if (name == "resnet56") return make_resnet(9, input, rng);
  if (name == "resnet50") return make_resnet50(input, rng);
  throw InputError(fmt::format("unknown model '{}'; valid: {}", name, fmt::join(model_names(), ", ")));
}

}  // namespace dtrain
