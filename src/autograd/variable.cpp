#include "autograd/variable.h"

namespace dtrain {

Variable::Variable(Tensor data, bool requires_grad, std::string name) : impl_(std::make_shared<VariableImpl>()) {
  impl_->data = std::move(data);
  impl_->requires_grad = requires_grad;
  impl_->name = std::move(name);
}

void Variable::add_grad_ready_hook(GradReadyHook hook) {
  if (!is_leaf()) throw InputError("grad-ready hooks can only be added to leaf variables (parameters)");
  impl_->grad_ready_hooks.push_back(std::move(hook));
}

namespace {
thread_local OpObserver* op_observer = nullptr;
}  // namespace

void set_op_observer(OpObserver* observer) { op_observer = observer; }

Variable Variable::from_op(Tensor data, std::string op, const std::vector<Variable>& inputs, BackwardFn backward) {
  if (op_observer != nullptr) {
    const std::string name = op;
    Variable out = record_op(std::move(data), std::move(op), inputs, std::move(backward));
    op_observer->op(name, inputs, out);
    return out;
  }
  return record_op(std::move(data), std::move(op), inputs, std::move(backward));
}

Variable Variable::record_op(Tensor data, std::string op, const std::vector<Variable>& inputs, BackwardFn backward) {
  bool any = false;
  if (grad_enabled()) {
    for (const Variable& v : inputs) any = any || v.requires_grad();
  }
  if (!any) return Variable(std::move(data), false);
  auto node = std::make_shared<Node>();
  node->name = std::move(op);
  node->backward = std::move(backward);
  node->edges.reserve(inputs.size());
  for (const Variable& v : inputs) {
    Edge e;
    if (v.requires_grad()) {
      if (v.is_leaf()) {
        e.leaf = v.impl();
      } else {
        e.node = v.grad_fn();
      }
    }
    node->edges.push_back(std::move(e));
  }
  Variable out(std::move(data), true);
  out.impl_->grad_fn = std::move(node);
  return out;
}

}  // namespace dtrain
