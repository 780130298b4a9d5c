#include "perfmodel/layer_trace.h"

#include <fmt/format.h>

#include <map>
#include <unordered_map>

namespace dtrain::perf {
namespace {

// Watches module calls (to know whether an op runs inside a leaf) and ops (to catch the others).
class FunctionalOps : public ModuleObserver, public OpObserver {
 public:
  explicit FunctionalOps(const Module& root) {
    for (const auto& [path, m] : root.named_modules()) paths_[m] = path;
  }
  void forward_begin(const Module& m, const Variable&) override {
    stack_.push_back(&m);
    calls_.emplace_back();
  }
  void forward_end(const Module& m, const Variable&) override {
    stack_.pop_back();
    calls_.pop_back();
    if (m.is_leaf()) ++leaves_done_;
  }
  void op(const std::string& name, const std::vector<Variable>& inputs, const Variable& output) override {
    if (stack_.empty() || stack_.back()->is_leaf() || name == "reshape" || inputs.empty()) return;
    const std::string& parent = paths_[stack_.back()];
    LayerSummary s;
    s.path = fmt::format("{}{}{}#{}", parent, parent.empty() ? "" : ".", name, calls_.back()[name]++);
    s.kind = name;
    s.input = inputs.front().shape().per_sample();
    s.output = output.shape().per_sample();
    const double in = static_cast<double>(s.input.numel()), out = static_cast<double>(s.output.numel());
    s.activation_bytes = 4 * (in + out);
    s.forward_flops = out;
    s.backward_flops = out;
    found_.emplace_back(leaves_done_, std::move(s));
  }
  // (number of leaves that ran before it, the op as a layer), in forward order.
  std::vector<std::pair<std::size_t, LayerSummary>> take() { return std::move(found_); }

 private:
  std::unordered_map<const Module*, std::string> paths_;
  std::vector<const Module*> stack_;
  std::vector<std::map<std::string, int>> calls_;  // per active call: ops of each name so far
  std::size_t leaves_done_ = 0;
  std::vector<std::pair<std::size_t, LayerSummary>> found_;
};

}  // namespace

std::vector<LayerSummary> trace_layers(Module& model, const Shape& sample_shape) {
  const std::vector<LayerSummary> leaves = summarize(model, sample_shape);
  std::vector<std::int64_t> dims{1};
  dims.insert(dims.end(), sample_shape.dims().begin(), sample_shape.dims().end());
  const bool was_training = model.training();
  model.eval();
  FunctionalOps ops(model);
  set_module_observer(&ops);
  set_op_observer(&ops);
  try {
    NoGradGuard no_grad;
    model(Variable(Tensor::zeros(Shape(dims))));
  } catch (...) {
    set_module_observer(nullptr);
    set_op_observer(nullptr);
    model.train(was_training);
    throw;
  }
  set_module_observer(nullptr);
  set_op_observer(nullptr);
  model.train(was_training);

  std::vector<LayerSummary> out;
  std::size_t next = 0;
  for (auto& [after, layer] : ops.take()) {
    while (next < after && next < leaves.size()) out.push_back(leaves[next++]);
    out.push_back(std::move(layer));
  }
  while (next < leaves.size()) out.push_back(leaves[next++]);
  return out;
}

}  // namespace dtrain::perf
