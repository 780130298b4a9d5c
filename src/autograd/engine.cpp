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

class RunningNode {
 public:
  explicit RunningNode(const Node* node) : previous_(running_node) { running_node = node; }
  ~RunningNode() { running_node = previous_; }
  RunningNode(const RunningNode&) = delete;
  RunningNode& operator=(const RunningNode&) = delete;

 private:
  const Node* previous_;
};

void accumulate(Tensor& into, const Tensor& g) {
  // Out of place: an op may hand the same tensor to several inputs (add does), so a gradient
  // buffer is never modified after it was handed out.
  into = into.defined() ? dispatch(into).add(into, g) : g;
}

// Post-order DFS (iterative: ResNet-56 graphs are deep) giving nodes in topological order
// reversed, plus how many edges point at each leaf.
struct LeafUses {
  int remaining = 0;
  std::shared_ptr<VariableImpl> leaf;
};

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
      const RunningNode running(node);
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
        if (grads[i].defined()) accumulate(e.leaf->grad, f32_operand(grads[i]));
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
