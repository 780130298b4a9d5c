#include "perfmodel/workload.h"

#include <fmt/format.h>

#include <unordered_map>

#include "core/error.h"
#include "core/random.h"
#include "nn/models/models.h"
#include "perfmodel/layer_trace.h"

namespace dtrain::perf {
namespace {

const std::vector<DatasetInfo>& datasets() {
  static const std::vector<DatasetInfo> all = {
      {"imagenet", 1281167, 50000, 3, 224, 224, 1000, 110e3,
       "ILSVRC-2012 (Russakovsky et al. 2015): 1,281,167 training JPEG images of about 110 KB on average "
       "(the training archive is about 140 GB) and 50,000 validation images; the models see 3x224x224 crops"},
      {"cifar10", 50000, 10000, 3, 32, 32, 10, 3073,
       "CIFAR-10 binary version (Krizhevsky 2009): 50,000 training and 10,000 test records of 1 label byte + "
       "3072 pixel bytes"},
      {"fashion-mnist", 60000, 10000, 1, 28, 28, 10, 785,
       "Fashion-MNIST (Xiao et al. 2017), IDX files: 60,000 training and 10,000 test images of 784 "
       "bytes + 1 label byte"},
      {"mnist", 60000, 10000, 1, 28, 28, 10, 785,
       "MNIST (LeCun et al. 1998), IDX files: 60,000 training and 10,000 test images of 784 bytes + 1 "
       "label byte"},
  };
  return all;
}

}  // namespace

std::int64_t Workload::total_params() const {
  std::int64_t n = 0;
  for (const ParameterInfo& p : params) n += p.numel;
  return n;
}

double Workload::sample_bytes() const {
  return layers.empty() ? 0.0 : 4.0 * static_cast<double>(layers.front().input.numel());
}

Workload describe_model(Module& model, const Shape& sample_shape, const std::string& name) {
  Workload w;
  w.model = name;
  w.layers = trace_layers(model, sample_shape);
  std::unordered_map<std::string, std::size_t> first_call;
  for (std::size_t i = 0; i < w.layers.size(); ++i) first_call.emplace(w.layers[i].path, i);
  for (const auto& [pname, var] : model.named_parameters()) {
    ParameterInfo p;
    p.name = pname;
    p.numel = var.data().numel();
    const std::size_t dot = pname.rfind('.');
    const auto it = first_call.find(dot == std::string::npos ? std::string() : pname.substr(0, dot));
    if (it != first_call.end()) {
      p.layer = it->second;
      const std::string& kind = w.layers[p.layer].kind;
      p.written_in_place = kind == "linear" && pname.ends_with(".weight");
      p.written_in_wire = (kind == "linear" || kind == "conv2d") && pname.ends_with(".weight");
    }
    w.params.push_back(std::move(p));
  }
  return w;
}

Workload describe_zoo_model(const std::string& model, const std::string& dataset) {
  const DatasetInfo& d = dataset_info(dataset);
  Rng rng(0);
  auto m = make_model(model, ModelInput{d.channels, d.height, d.width, d.classes}, rng);
  return describe_model(*m, Shape{d.channels, d.height, d.width}, model);
}

Workload workload_from_layers(std::vector<LayerSummary> layers, std::string model) {
  Workload w;
  w.model = std::move(model);
  w.layers = std::move(layers);
  for (std::size_t i = 0; i < w.layers.size(); ++i) {
    if (w.layers[i].params > 0) w.params.push_back({w.layers[i].path, w.layers[i].params, i});
  }
  // A layer called twice appears twice in the list; its parameters once, owned by the first call.
  std::unordered_map<std::string, bool> seen;
  std::erase_if(w.params, [&](const ParameterInfo& p) { return !seen.emplace(p.name, true).second; });
  return w;
}

const DatasetInfo& dataset_info(const std::string& name) {
  for (const DatasetInfo& d : datasets()) {
    if (d.name == name) return d;
  }
  throw InputError(
      fmt::format("unknown dataset '{}' for prediction; valid: {}", name, fmt::join(dataset_info_names(), ", ")));
}

std::vector<std::string> dataset_info_names() {
  std::vector<std::string> names;
  for (const DatasetInfo& d : datasets()) names.push_back(d.name);
  return names;
}

}  // namespace dtrain::perf
