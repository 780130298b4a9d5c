// The backward engine: topological order by depth-first search from the root, then one sweep in
// reverse order. Dependency counts on leaves tell when a leaf's gradient is final.
#include <unordered_map>
#include <unordered_set>

#include "autograd/variable.h"
#include "tensor/backend.h"

namespace dtrain {
namespace {

thread_local bool grad_mode = true;
thread_local BackwardObserver* observer = nullptr;
thread_local const Node* running_node = nullptr;  // whose backward function runs (gradient_destination)
// How many edges of the pass still lead to a leaf: its gradient is final when none does.
struct LeafUses {
  int remaining = 0;
  std::shared_ptr<VariableImpl> leaf;
};
// The running pass's edges still to reach each leaf (scaled_gradient_destination).
thread_local const std::unordered_map<VariableImpl*, LeafUses>* pass_leaf_uses = nullptr;

class RunningNode {
 public:
  RunningNode(const Node* node, const std::unordered_map<VariableImpl*, LeafUses>& uses)
      : previous_(running_node), previous_uses_(pass_leaf_uses) {
    running_node = node;
    pass_leaf_uses = &uses;
  }
  ~RunningNode() {
    running_node = previous_;
    pass_leaf_uses = previous_uses_;
  }
  RunningNode(const RunningNode&) = delete;
  RunningNode& operator=(const RunningNode&) = delete;

 private:
  const Node* previous_;
  const std::unordered_map<VariableImpl*, LeafUses>* previous_uses_;
};

void accumulate(Tensor& into, const Tensor& g) {
  // Out of place: an op may hand the same tensor to several inputs (add does), so a gradient
  // buffer is never modified after it was handed out.
  into = into.defined() ? dispatch(into).add(into, g) : g;
}

bool is_16bit(const Tensor& t) { return t.defined() && (t.dtype() == DType::kBF16 || t.dtype() == DType::kF16); }

// Whether an op wrote the gradient into the leaf's scaled 16-bit destination
// (scaled_gradient_destination offered it: the leaf had no gradient yet).
bool written_scaled(const VariableImpl& leaf, const Tensor& g) {
  const Tensor& d = leaf.scaled_grad_destination;
  return g.defined() && d.defined() && g.dtype() == d.dtype() && g.raw_data() == d.raw_data();
}

// Post-order DFS (iterative: ResNet-56 graphs are deep) giving nodes in topological order
// reversed, plus how many edges point at each leaf.
void sort_graph(Node* root, std::vector<Node*>& order, std::unordered_map<VariableImpl*, LeafUses>& leaf_uses) {
  std::unordered_set<Node*> seen{root};
  std::vector<std::pair<Node*, std::size_t>> stack{{root, 0}};
  while (!stack.empty()) {
    auto& [node, next] = stack.back();
    if (next < node->edges.size()) {
      const Edge& e = node->edges[next++];
      if (e.node && seen.insert(e.node.get()).second) stack.emplace_back(e.node.get(), 0);
      if (e.leaf) {
        LeafUses& u = leaf_uses[e.leaf.get()];
        ++u.remaining;
        u.leaf = e.leaf;
      }
      continue;
    }
    order.push_back(node);
    stack.pop_back();
  }
}

void fire_hooks(const std::shared_ptr<VariableImpl>& leaf) {
  if (leaf->grad_ready_hooks.empty()) return;
  Variable v(leaf);
  for (auto& hook : leaf->grad_ready_hooks) hook(v);
}

}  // namespace

const Tensor* gradient_destination(std::size_t edge, const Shape& shape) {
  if (running_node == nullptr || edge >= running_node->edges.size()) return nullptr;
  const std::shared_ptr<VariableImpl>& leaf = running_node->edges[edge].leaf;
  if (leaf == nullptr || leaf->grad.defined()) return nullptr;
  const Tensor& d = leaf->grad_destination;
  return plain_f32_cpu_of_shape(d, shape) ? &d : nullptr;
}

ScaledDestination scaled_gradient_destination(std::size_t edge, const Shape& shape) {
  if (running_node == nullptr || pass_leaf_uses == nullptr || edge >= running_node->edges.size()) return {};
  const std::shared_ptr<VariableImpl>& leaf = running_node->edges[edge].leaf;
  if (leaf == nullptr || leaf->grad.defined()) return {};
  const Tensor& d = leaf->scaled_grad_destination;
  if (!is_16bit(d) || d.device() != Device::cpu() || d.layout() != Layout::kPlain || d.shape() != shape) {
    return {};
  }
  const auto uses = pass_leaf_uses->find(leaf.get());
  if (uses == pass_leaf_uses->end() || uses->second.remaining != 1) return {};
  return {&d, leaf->grad_destination_scale};
}

bool grad_enabled() { return grad_mode; }
NoGradGuard::NoGradGuard() : previous_(grad_mode) { grad_mode = false; }
NoGradGuard::~NoGradGuard() { grad_mode = previous_; }
void set_backward_observer(BackwardObserver* o) { observer = o; }

void Variable::backward() {
  if (impl_->data.numel() != 1) {
    throw ShapeError(fmt::format("backward() without a seed needs a one-element variable, got shape {}",
                                 impl_->data.shape()));
  }
  backward(Tensor::full(impl_->data.shape(), 1.0, impl_->data.dtype()));
}

void Variable::backward(const Tensor& seed) {
  check_same_shape(seed, impl_->data, "backward seed");
  if (!impl_->requires_grad) throw InputError("backward() on a variable that does not require gradients");
  if (is_leaf()) {
    accumulate(impl_->grad, f32_operand(seed));
    fire_hooks(impl_);
    return;
  }
  Node* root = impl_->grad_fn.get();
  if (!root->backward) {
    throw InputError(fmt::format("backward() through '{}' a second time: its saved tensors were freed", root->name));
  }
  std::vector<Node*> order;
  std::unordered_map<VariableImpl*, LeafUses> leaf_uses;
  sort_graph(root, order, leaf_uses);

  std::unordered_map<Node*, Tensor> pending{{root, seed}};
  for (auto it = order.rbegin(); it != order.rend(); ++it) {
    Node* node = *it;
    auto found = pending.find(node);
    if (found == pending.end()) continue;  // no gradient reached this node
    Tensor grad_out = std::move(found->second);
    pending.erase(found);
    if (!node->backward) {
      throw InputError(fmt::format("backward() through '{}' a second time: its saved tensors were freed", node->name));
    }
    if (observer) observer->node_begin(*node);
    if (!node->reads_bf16_gradient) grad_out = f32_operand(grad_out);  // charged to the node's time
    std::vector<Tensor> grads;
    {
      const RunningNode running(node, leaf_uses);
      grads = node->backward(grad_out);
    }
    node->backward = nullptr;  // frees the saved tensors as soon as they are used
    if (observer) observer->node_end(*node);
    DT_CHECK_EQ(grads.size(), node->edges.size());
    for (std::size_t i = 0; i < grads.size(); ++i) {
      const Edge& e = node->edges[i];
      if (e.node) {
        if (grads[i].defined()) accumulate(pending[e.node.get()], grads[i]);
      } else if (e.leaf) {
        if (written_scaled(*e.leaf, grads[i])) {
          e.leaf->grad = std::move(grads[i]);  // final, and scaled: kept as the op wrote it
        } else if (grads[i].defined()) {
          DT_CHECK(!is_16bit(e.leaf->grad),
                   "a gradient written scaled into a 16-bit destination cannot be added to: zero_grad() before the "
                   "next backward pass");
          accumulate(e.leaf->grad, f32_operand(grads[i]));
        }
        // The leaf holds its gradient now; dropping this slot lets a hook see whether anything
        // else (another edge, a pending sum, a view of grad_out) still shares the storage.
        grads[i] = Tensor();
        if (--leaf_uses[e.leaf.get()].remaining == 0) fire_hooks(e.leaf);
      }
    }
  }
  // Leaves behind branches that received no gradient still get their hooks, once, so a
  // data-parallel step never waits for a gradient that will not come.
  for (auto& [impl, uses] : leaf_uses) {
    if (uses.remaining > 0) fire_hooks(uses.leaf);
  }
}

}  // namespace dtrain
