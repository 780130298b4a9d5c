#include "nn/module.h"

namespace dtrain {
namespace {

thread_local ModuleObserver* module_observer = nullptr;

std::string join(const std::string& prefix, const std::string& name) {
  return prefix.empty() ? name : prefix + "." + name;
}

}  // namespace

void set_module_observer(ModuleObserver* observer) { module_observer = observer; }

Variable Module::operator()(const Variable& x) {
  ModuleObserver* o = module_observer;
  if (o == nullptr) return forward(x);
  o->forward_begin(*this, x);
  Variable y = forward(x);
  o->forward_end(*this, y);
  return y;
}

Variable Module::register_parameter(std::string name, Tensor init) {
  Variable v(std::move(init), true, name);
  params_.emplace_back(std::move(name), v);
  return v;
}

void Module::register_buffer(std::string name, Tensor* buffer) { buffers_.emplace_back(std::move(name), buffer); }

void Module::collect_parameters(const std::string& prefix, std::vector<std::pair<std::string, Variable>>& out) const {
  for (const auto& [name, v] : params_) out.emplace_back(join(prefix, name), v);
  for (const auto& [name, child] : children_) child->collect_parameters(join(prefix, name), out);
}

void Module::collect_buffers(const std::string& prefix, std::vector<std::pair<std::string, Tensor>>& out) const {
  for (const auto& [name, t] : buffers_) out.emplace_back(join(prefix, name), *t);
  for (const auto& [name, child] : children_) child->collect_buffers(join(prefix, name), out);
}

void Module::collect_modules(const std::string& prefix, std::vector<std::pair<std::string, const Module*>>& out) const {
  out.emplace_back(prefix, this);
  for (const auto& [name, child] : children_) child->collect_modules(join(prefix, name), out);
}

std::vector<std::pair<std::string, Variable>> Module::named_parameters() const {
  std::vector<std::pair<std::string, Variable>> out;
  collect_parameters("", out);
  return out;
}

std::vector<Variable> Module::parameters() const {
  std::vector<Variable> out;
  for (auto& [name, v] : named_parameters()) out.push_back(v);
  return out;
}

std::vector<std::pair<std::string, Tensor>> Module::named_buffers() const {
  std::vector<std::pair<std::string, Tensor>> out;
  collect_buffers("", out);
  return out;
}

std::vector<std::pair<std::string, const Module*>> Module::named_modules() const {
  std::vector<std::pair<std::string, const Module*>> out;
  collect_modules("", out);
  return out;
}

std::int64_t Module::num_parameters() const {
  std::int64_t n = 0;
  for (const auto& [name, v] : named_parameters()) n += v.data().numel();
  return n;
}

void Module::train(bool on) {
  training_ = on;
  for (auto& [name, child] : children_) child->train(on);
}

}  // namespace dtrain
