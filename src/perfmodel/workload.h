// What the performance model predicts for: the model's layer list (nn/summary.h, the same FLOP
// and byte counts `dtrain bench` reports), its parameters in registration order (what the
// bucketer walks, parallel/buckets.h) with the layer whose backward makes each gradient final,
// and the dataset's size and bytes on disk.
#pragma once

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "nn/summary.h"

namespace dtrain::perf {

struct ParameterInfo {
  std::string name;
  std::int64_t numel = 0;
  // Index into Workload::layers of the layer that owns it (its first call in forward, whose
  // backward runs last); kNoLayer when that layer never ran (its gradient arrives at the end).
  std::size_t layer = kNoLayer;
  // Whether backward writes its gradient straight into a bucket's slot (a linear layer's weight:
  // autograd/variable.h, gradient_destination), so no copy into the bucket is charged.
  bool written_in_place = false;
  // Whether backward can write it scaled into a 16-bit wire slot itself (a linear layer's or a
  // convolution's weight, in a bf16 run with a bf16 wire: autograd/variable.h,
  // scaled_gradient_destination), so no cast into the wire is charged then.
  bool written_in_wire = false;
  static constexpr std::size_t kNoLayer = std::numeric_limits<std::size_t>::max();
};

struct Workload {
  std::string model;
  std::vector<LayerSummary> layers;   // forward order
  std::vector<ParameterInfo> params;  // registration order
  std::int64_t total_params() const;
  // Per-sample input bytes in f32 (what the loader writes per sample).
  double sample_bytes() const;
};

// Traces `model` on one sample of `sample_shape` (trace_layers: its layers and the functional ops
// of composite modules) and maps every named parameter to
// its layer by path ("layer1.0.conv1.weight" belongs to layer "layer1.0.conv1").
Workload describe_model(Module& model, const Shape& sample_shape, const std::string& name);
// Builds a model from the zoo (nn/models) for `dataset` and describes it.
Workload describe_zoo_model(const std::string& model, const std::string& dataset);
// From a layer list alone: each layer's parameters as one tensor (bucket boundaries may then
// differ slightly from the trainer's, which buckets weights and biases separately).
Workload workload_from_layers(std::vector<LayerSummary> layers, std::string model = "");

struct DatasetInfo {
  std::string name;
  std::int64_t train_samples = 0;
  std::int64_t test_samples = 0;  // evaluated after every epoch, as the trainer does
  std::int64_t channels = 0, height = 0, width = 0, classes = 0;
  double disk_bytes_per_sample = 0;  // what the loader reads from disk per training sample
  std::string source;
};
// imagenet, cifar10, fashion-mnist, mnist; throws InputError listing them.
const DatasetInfo& dataset_info(const std::string& name);
std::vector<std::string> dataset_info_names();

}  // namespace dtrain::perf
