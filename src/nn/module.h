// Modules: layers and models as trees of named children (Chainer's Link / PyTorch's Module).
// Parameter names follow PyTorch's dotted paths ("layers.3.sc.0.weight"), so the reference
// models in shared/peers/models.py, golden files and exported checkpoints line up by name.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "autograd/variable.h"

namespace dtrain {

class Module;

// Observes module calls (per-layer timing and shapes, traces, the performance model's layer
// list). Installed per thread; sees every module, outermost first.
class ModuleObserver {
 public:
  virtual ~ModuleObserver() = default;
  virtual void forward_begin(const Module& m, const Variable& input) = 0;
  virtual void forward_end(const Module& m, const Variable& output) = 0;
};
void set_module_observer(ModuleObserver* observer);

class Module {
 public:
  explicit Module(std::string type) : type_(std::move(type)) {}
  virtual ~Module() = default;
  Module(const Module&) = delete;
  Module& operator=(const Module&) = delete;

  Variable operator()(const Variable& x);
  virtual Variable forward(const Variable& x) = 0;

  // "linear", "conv2d", "batch_norm", ... or the model's name.
  const std::string& type() const { return type_; }
  // True for modules with no children (the layers the performance model costs).
  bool is_leaf() const { return children_.empty(); }
  // A residual block's last normalisation on its branch (before the shortcut's add), or null:
  // Goyal et al.'s zero-gamma starts the block as the identity by zeroing its scale.
  virtual const Module* residual_branch_norm() const { return nullptr; }

  std::vector<std::pair<std::string, Variable>> named_parameters() const;
  std::vector<Variable> parameters() const;
  // Parameters of this module only, not of its children.
  const std::vector<std::pair<std::string, Variable>>& own_parameters() const { return params_; }
  // Non-trainable state that checkpoints keep (batch-norm running statistics).
  std::vector<std::pair<std::string, Tensor>> named_buffers() const;
  // Every module in the tree with its path ("" for this one), parents before children.
  std::vector<std::pair<std::string, const Module*>> named_modules() const;
  std::int64_t num_parameters() const;

  void train(bool on = true);
  void eval() { train(false); }
  bool training() const { return training_; }

 protected:
  Variable register_parameter(std::string name, Tensor init);
  // `buffer` must be a member of the derived module (its address is kept).
  void register_buffer(std::string name, Tensor* buffer);
  template <typename M>
  std::shared_ptr<M> register_module(std::string name, std::shared_ptr<M> m) {
    children_.emplace_back(std::move(name), m);
    return m;
  }

 private:
  void collect_parameters(const std::string& prefix, std::vector<std::pair<std::string, Variable>>& out) const;
  void collect_buffers(const std::string& prefix, std::vector<std::pair<std::string, Tensor>>& out) const;
  void collect_modules(const std::string& prefix, std::vector<std::pair<std::string, const Module*>>& out) const;

  std::string type_;
  bool training_ = true;
  std::vector<std::pair<std::string, Variable>> params_;
  std::vector<std::pair<std::string, Tensor*>> buffers_;
  std::vector<std::pair<std::string, std::shared_ptr<Module>>> children_;
};

}  // namespace dtrain
