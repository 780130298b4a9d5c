#include "perfmodel/layer_cost.h"

#include <algorithm>

namespace dtrain::perf {
namespace {

PassTime roofline(double flops, double read, double written, double rate, const DeviceProfile& d) {
  PassTime t;
  t.arithmetic = flops / rate;
  t.memory = read / d.memory_read.value + written / d.memory_write.value;
  t.seconds = std::max(t.arithmetic, t.memory);
  return t;
}

}  // namespace

LayerTime layer_time(const LayerSummary& l, std::int64_t micro_batch, const DeviceProfile& d) {
  const double m = static_cast<double>(micro_batch);
  const double rate = d.compute[compute_kind_index(l.kind)].value;
  const bool moves = l.activation_bytes > 0;
  // Bytes of an activation element and of its gradient's: 4 in f32, 2 in 16-bit runs (profile.h: at_precision).
  const double a = moves ? d.activation_element_bytes : 0.0, g = moves ? d.gradient_element_bytes : 0.0;
  const double in = static_cast<double>(l.input.numel()), out = static_cast<double>(l.output.numel());
  const double w = l.param_bytes;
  // Batch normalisation in training makes two passes each way (oneDNN and cuDNN alike): forward
  // reads its input for the statistics and again to normalise; backward reads input and output
  // gradient for the two reductions and again for the input gradient.
  // A residual addition reads two inputs of its output's size.
  const bool bn = l.kind == "batch_norm";
  const double forward_reads = bn || l.kind == "add" ? 2.0 : 1.0, backward_reads = bn ? 2.0 : 1.0;
  LayerTime t;
  // Backward reads x and dy (each backward_reads times) and writes dx.
  t.forward = roofline(m * l.forward_flops, forward_reads * m * in * a + w, m * out * a, rate, d);
  t.backward = roofline(m * l.backward_flops, backward_reads * m * (in * a + out * g) + w, m * in * g + w, rate, d);
  return t;
}

double gradient_accumulation_seconds(double params, const DeviceProfile& d) {
  return 1.5 * params * d.gradient_copy_seconds();
}

std::vector<KindTime> time_by_kind(const std::vector<LayerSummary>& layers, std::int64_t micro_batch,
                                   const DeviceProfile& device) {
  std::vector<KindTime> out(kComputeKinds.size());
  for (std::size_t k = 0; k < out.size(); ++k) out[k].kind = kComputeKinds[k];
  for (const LayerSummary& l : layers) {
    KindTime& k = out[compute_kind_index(l.kind)];
    const LayerTime t = layer_time(l, micro_batch, device);
    ++k.layers;
    k.forward += t.forward.seconds;
    k.backward += t.backward.seconds;
    for (const PassTime& pass : {t.forward, t.backward}) {
      if (pass.memory > pass.arithmetic) k.memory_bound += pass.seconds;
    }
  }
  return out;
}

}  // namespace dtrain::perf
