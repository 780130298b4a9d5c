// The layer list of a model, traced by running one forward pass: for every leaf module its
// path, kind, shapes, parameter count and its work counted as Paleo (Qi et al. 2017) counts it.
// The trainer's metrics, `dtrain bench` (achieved GFLOP/s) and the performance model all read it.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "nn/module.h"

namespace dtrain {

struct LayerSummary {
  std::string path;  // "layers.3.c1"
  std::string kind;  // Module::type(): conv2d, linear, batch_norm, relu, max_pool, ...
  Shape input, output;  // per sample (batch dimension dropped)
  std::int64_t params = 0;
  // Per sample. Forward FLOPs: conv 2*Cin*KH*KW*Cout*OH*OW (a multiply and an add per tap),
  // linear 2*I*O, elementwise layers a few per output. Backward: data gradient plus weight
  // gradient, each as costly as the forward for conv and linear (2x forward; 1x for the first
  // layer, whose input needs no gradient), about 2x forward for the others.
  double forward_flops = 0, backward_flops = 0;
  // Per sample bytes read and written (f32): input + output activations; parameters per step.
  double activation_bytes = 0;
  double param_bytes = 0;
  // Convolution and pooling geometry (0 where it does not apply).
  std::int64_t kernel = 0, stride = 0, padding = 0, in_channels = 0, out_channels = 0;
};

// Traces `model` on one zero sample of `sample_shape` ([C, H, W] or [features]) in evaluation
// mode without gradients; the model's state is unchanged.
std::vector<LayerSummary> summarize(Module& model, const Shape& sample_shape);

struct ModelCost {
  double forward_flops = 0, backward_flops = 0;  // per sample
  std::int64_t params = 0;
};
ModelCost total_cost(const std::vector<LayerSummary>& layers);

}  // namespace dtrain
