#include "nn/summary.h"

#include <unordered_map>

#include "nn/activation.h"
#include "nn/conv2d.h"
#include "nn/linear.h"

namespace dtrain {
namespace {

class Tracer : public ModuleObserver {
 public:
  explicit Tracer(const Module& root) {
    for (const auto& [path, m] : root.named_modules()) paths_[m] = path;
  }
  void forward_begin(const Module& m, const Variable& input) override {
    if (m.is_leaf()) inputs_[&m] = input.shape();
  }
  void forward_end(const Module& m, const Variable& output) override {
    if (!m.is_leaf()) return;
    LayerSummary s;
    s.path = paths_[&m];
    s.kind = m.type();
    s.input = inputs_[&m].per_sample();
    s.output = output.shape().per_sample();
    for (const auto& [name, p] : m.own_parameters()) s.params += p.data().numel();
    const double in = static_cast<double>(s.input.numel()), out = static_cast<double>(s.output.numel());
    s.activation_bytes = 4 * (in + out);
    s.param_bytes = 4 * static_cast<double>(s.params);
    if (const auto* c = dynamic_cast<const Conv2d*>(&m)) {
      s.kernel = c->kernel();
      s.stride = c->geometry().stride_h;
      s.padding = c->geometry().pad_h;
      s.in_channels = c->in_channels();
      s.out_channels = c->out_channels();
      s.forward_flops = 2.0 * static_cast<double>(c->in_channels() * c->kernel() * c->kernel()) * out;
      s.backward_flops = 2 * s.forward_flops;
    } else if (const auto* l = dynamic_cast<const Linear*>(&m)) {
      s.in_channels = l->in_features();
      s.out_channels = l->out_features();
      s.forward_flops = 2.0 * static_cast<double>(l->in_features()) * out;
      s.backward_flops = 2 * s.forward_flops;
    } else if (const auto* p = dynamic_cast<const Pool2d*>(&m)) {
      s.kernel = p->global() ? s.input[1] : p->geometry().kernel_h;
      s.stride = p->global() ? s.kernel : p->geometry().stride_h;
      s.padding = p->geometry().pad_h;
      s.forward_flops = static_cast<double>(s.kernel * s.kernel) * out;
      s.backward_flops = s.forward_flops;
    } else if (m.type() == "batch_norm") {
      s.forward_flops = 5 * out;  // mean, variance, normalise, scale, shift
      s.backward_flops = 8 * out;
    } else if (m.type() == "flatten") {
      s.activation_bytes = 0;  // a view (or one reorder)
    } else {
      s.forward_flops = out;
      s.backward_flops = out;
    }
    layers_.push_back(std::move(s));
  }
  std::vector<LayerSummary> take() { return std::move(layers_); }

 private:
  std::unordered_map<const Module*, std::string> paths_;
  std::unordered_map<const Module*, Shape> inputs_;
  std::vector<LayerSummary> layers_;
};

}  // namespace

std::vector<LayerSummary> summarize(Module& model, const Shape& sample_shape) {
  std::vector<std::int64_t> dims{1};
  dims.insert(dims.end(), sample_shape.dims().begin(), sample_shape.dims().end());
  const bool was_training = model.training();
  model.eval();
  Tracer tracer(model);
  set_module_observer(&tracer);
  try {
    NoGradGuard no_grad;
    model(Variable(Tensor::zeros(Shape(dims))));
  } catch (...) {
    set_module_observer(nullptr);
    model.train(was_training);
    throw;
  }
  set_module_observer(nullptr);
  model.train(was_training);
  std::vector<LayerSummary> layers = tracer.take();
  // The first layer with parameters needs no gradient with respect to its input.
  for (LayerSummary& s : layers) {
    if (s.kind == "conv2d" || s.kind == "linear") {
      s.backward_flops = s.forward_flops;
      break;
    }
  }
  return layers;
}

ModelCost total_cost(const std::vector<LayerSummary>& layers) {
  ModelCost c;
  for (const LayerSummary& s : layers) {
    c.forward_flops += s.forward_flops;
    c.backward_flops += s.backward_flops;
    c.params += s.params;
  }
  return c;
}

}  // namespace dtrain
