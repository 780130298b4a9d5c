// Define-by-run automatic differentiation. Every op applied to Variables that require gradients
// records a Node holding its backward function; the graph is exactly the computation that ran.
// backward() walks it in reverse topological order, accumulates gradients into the leaves
// (parameters), and fires each leaf's grad-ready hooks the moment its gradient is final, which
// is what lets the data-parallel bucketer start an allreduce while backward is still running.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "tensor/tensor.h"

namespace dtrain {

struct Node;
class Variable;

using GradReadyHook = std::function<void(Variable&)>;

struct VariableImpl {
  Tensor data;
  Tensor grad;  // undefined until a backward pass reaches this leaf
  // Where an op may write this leaf's gradient when the pass reaches it with none yet (see
  // gradient_destination); undefined: wherever the op allocates it.
  Tensor grad_destination;
  // A 16-bit destination (a bucket's wire slot) that an op may write `grad_destination_scale`
  // times the gradient into, rounded to nearest even (see scaled_gradient_destination).
  Tensor scaled_grad_destination;
  float grad_destination_scale = 1.0F;
  bool requires_grad = false;
  std::shared_ptr<Node> grad_fn;  // the op that produced this variable; null for leaves
  std::string name;
  std::vector<GradReadyHook> grad_ready_hooks;
};

// Where a gradient flows: into an op's node, or into a leaf variable.
struct Edge {
  std::shared_ptr<Node> node;
  std::shared_ptr<VariableImpl> leaf;
  bool defined() const { return node != nullptr || leaf != nullptr; }
};

// Maps the gradient of the node's output to gradients of its inputs (one per edge; an undefined
// Tensor means no gradient for that input).
using BackwardFn = std::function<std::vector<Tensor>(const Tensor& grad_output)>;

struct Node {
  std::string name;  // op name, for traces and error messages
  std::vector<Edge> edges;
  BackwardFn backward;
  // Whether backward takes a bf16 output gradient as it is (the nodes of bf16 activations:
  // convolution, batch norm, ReLU, addition, pooling); the engine widens one to f32 for every other node
  // and every leaf.
  bool reads_bf16_gradient = false;
};

class Variable {
 public:
  Variable() = default;
  explicit Variable(Tensor data, bool requires_grad = false, std::string name = {});
  explicit Variable(std::shared_ptr<VariableImpl> impl) : impl_(std::move(impl)) {}

  bool defined() const { return impl_ != nullptr; }
  const Tensor& data() const { return impl_->data; }
  Tensor& data() { return impl_->data; }
  const Tensor& grad() const { return impl_->grad; }
  void set_grad(Tensor g) { impl_->grad = std::move(g); }
  // Drops the gradient (the next backward pass assigns instead of accumulating).
  void zero_grad() { impl_->grad = Tensor(); }
  bool requires_grad() const { return impl_ && impl_->requires_grad; }
  bool is_leaf() const { return impl_->grad_fn == nullptr; }
  const Shape& shape() const { return impl_->data.shape(); }
  const std::string& name() const { return impl_->name; }
  const std::shared_ptr<Node>& grad_fn() const { return impl_->grad_fn; }
  const std::shared_ptr<VariableImpl>& impl() const { return impl_; }

  // Asks ops that can (linear's weight gradient) to write this leaf's gradient straight into
  // `where` when it is the first gradient the leaf receives after zero_grad(), so grad() is then
  // `where` itself: the data-parallel buckets hand their shared-memory slots out this way and
  // skip copying the gradient in. Any later contribution is added out of place, as always.
  // An undefined tensor removes the destination.
  void set_grad_destination(Tensor where) { impl_->grad_destination = std::move(where); }
  // The same for a 16-bit `where` (a bucket's f16 or bf16 wire slot) that receives `scale` times
  // the gradient, rounded to nearest even, from an op that can write it so in the pass that
  // computes it (linear and convolution weight gradients in bf16). grad() is then that scaled 16-bit
  // tensor until its owner (parallel/buckets.h) gives the leaf the allreduced mean.
  void set_scaled_grad_destination(Tensor where, float scale) {
    impl_->scaled_grad_destination = std::move(where);
    impl_->grad_destination_scale = scale;
  }

  // Called during backward when this leaf's gradient for the pass is complete. The engine keeps
  // no handle on the gradient by then: where grad().storage_unshared(), the hook may take the
  // gradient over and write into it (parallel/buckets.h does).
  void add_grad_ready_hook(GradReadyHook hook);
  void clear_grad_ready_hooks() { impl_->grad_ready_hooks.clear(); }

  // Backpropagates from this variable; a one-element variable is seeded with 1.
  void backward();
  void backward(const Tensor& seed);

  // A new variable produced by an op: records the node when gradients are enabled and some
  // input requires them.
  static Variable from_op(Tensor data, std::string op, const std::vector<Variable>& inputs, BackwardFn backward);

 private:
  static Variable record_op(Tensor data, std::string op, const std::vector<Variable>& inputs, BackwardFn backward);
  std::shared_ptr<VariableImpl> impl_;
};

// Inside a node's backward function: the tensor the gradient for the node's edge `edge` should be
// written into, if that edge leads to a leaf with a gradient destination of this shape (plain f32
// on the CPU) and no gradient yet in this pass; null otherwise (the op allocates its own).
const Tensor* gradient_destination(std::size_t edge, const Shape& shape);

// Inside a node's backward function: the leaf's scaled 16-bit destination for edge `edge`
// (Variable::set_scaled_grad_destination) and its factor, if the leaf has one of this shape, no
// gradient yet in this pass and no other edge still to bring it one (the write is final: nothing
// is ever added to a scaled gradient); {nullptr, 1} otherwise. An op that writes it returns that
// tensor as the gradient; one that does not returns an f32 gradient as always.
struct ScaledDestination {
  const Tensor* tensor = nullptr;
  float scale = 1.0F;
};
ScaledDestination scaled_gradient_destination(std::size_t edge, const Shape& shape);

// Gradient recording is on by default; NoGradGuard turns it off on this thread (evaluation).
bool grad_enabled();
class NoGradGuard {
 public:
  NoGradGuard();
  ~NoGradGuard();
  NoGradGuard(const NoGradGuard&) = delete;
  NoGradGuard& operator=(const NoGradGuard&) = delete;

 private:
  bool previous_;
};

// Observes the backward pass op by op (per-layer timing, traces). Installed per thread.
class BackwardObserver {
 public:
  virtual ~BackwardObserver() = default;
  virtual void node_begin(const Node& node) = 0;
  virtual void node_end(const Node& node) = 0;
};
void set_backward_observer(BackwardObserver* observer);

// Observes every op as forward records it (Variable::from_op), gradients on or off: what a
// composite module computes outside its layers (a residual block's add and ReLU), and which
// backward node each op made. Installed per thread.
class OpObserver {
 public:
  virtual ~OpObserver() = default;
  virtual void op(const std::string& name, const std::vector<Variable>& inputs, const Variable& output) = 0;
};
void set_op_observer(OpObserver* observer);

}  // namespace dtrain
