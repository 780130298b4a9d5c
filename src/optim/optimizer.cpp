#include "optim/optimizer.h"

#include "optim/adam.h"
#include "optim/lamb.h"
#include "optim/lars.h"
#include "optim/rmsprop.h"
#include "optim/rmsprop_warmup.h"
#include "optim/sgd.h"

namespace dtrain {

Optimizer::Optimizer(std::vector<Variable> params, double lr) : params_(std::move(params)), lr_(lr) {
  if (!(lr >= 0)) throw InputError(fmt::format("the learning rate (--lr) must be >= 0, got {}", lr));
}

void Optimizer::step() {
  std::vector<Tensor> state(slot_names().size());
  for (std::size_t i = 0; i < params_.size(); ++i) {
    Variable& p = params_[i];
    if (!p.grad().defined()) continue;
    check_same_shape(p.grad(), p.data(), "optimizer step (gradient vs parameter)");
    for (std::size_t s = 0; s < state.size(); ++s) state[s] = slot(s, i);
    current_ = i;
    update(p.data(), p.grad(), state);
  }
  applied_lr_ = lr_;
  ++steps_;
}

namespace {

// Elements [lo, hi) of t's storage as a flat plain tensor (t outlives it).
Tensor storage_range(const Tensor& t, std::int64_t lo, std::int64_t hi) {
  auto* base = static_cast<std::byte*>(t.raw_data()) + static_cast<std::size_t>(lo) * dtype_size(t.dtype());
  return Tensor::over_external(base, Shape{hi - lo}, t.dtype());
}

}  // namespace

std::optional<Optimizer::ParamPart> Optimizer::part_of(std::size_t i, Range r) {
  Variable& p = params_[i];
  if (!p.grad().defined()) return std::nullopt;
  check_same_shape(p.grad(), p.data(), "optimizer step (gradient vs parameter)");
  Tensor& w = p.data();
  const auto [lo, hi] = r;
  DT_CHECK(0 <= lo && lo <= hi && hi <= w.numel(), "step_ranges: [{}, {}) outside {} elements", lo, hi, w.numel());
  DT_CHECK(w.device().type == DeviceType::kCPU, "step_ranges needs CPU parameters, not {}", w.describe());
  if (lo == hi) return std::nullopt;
  if (layerwise() && !norm_reducer_ && (lo != 0 || hi != w.numel())) {
    throw InputError(
        fmt::format("{} scales each parameter by its whole norm: it cannot update elements [{}, {}) "
                    "of {} alone without a norm reducer (set_norm_reducer)",
                    name(), lo, hi, w.numel()));
  }
  ParamPart part;
  part.g_whole = p.grad().to_layout(w.layout());  // so that one storage range holds the same elements
  part.w = storage_range(w, lo, hi);
  part.g = storage_range(part.g_whole, lo, hi);
  for (std::size_t s = 0; s < slot_names().size(); ++s) {
    const Tensor& whole = slot(s, i);
    DT_CHECK(whole.layout() == w.layout(), "optimizer state layout differs from its parameter's");
    part.state.push_back(storage_range(whole, lo, hi));
  }
  return part;
}

void Optimizer::step_ranges(std::span<const Range> ranges) {
  DT_CHECK(ranges.size() == params_.size(), "step_ranges: {} ranges for {} parameters", ranges.size(), params_.size());
  if (layerwise() && norm_reducer_) {
    step_layerwise_ranges(ranges);
    return;
  }
  for (std::size_t i = 0; i < params_.size(); ++i) {
    std::optional<ParamPart> part = part_of(i, ranges[i]);
    if (!part) continue;
    current_ = i;
    update(part->w, part->g, part->state);
  }
  applied_lr_ = lr_;
  ++steps_;
}

Optimizer::NormSums Optimizer::norm_sums(Tensor&, const Tensor&, std::span<Tensor>) {
  DT_CHECK(false, "{} has no layer-wise norms", name());
  return {};
}

void Optimizer::apply_with_norms(Tensor&, const Tensor&, std::span<Tensor>, NormSums) {
  DT_CHECK(false, "{} has no layer-wise norms", name());
}

void Optimizer::step_layerwise_ranges(std::span<const Range> ranges) {
  std::vector<std::optional<ParamPart>> parts(params_.size());
  std::vector<double> sums(2 * params_.size(), 0.0);  // every parameter's, also where this rank has no part
  for (std::size_t i = 0; i < params_.size(); ++i) {
    parts[i] = part_of(i, ranges[i]);
    if (!parts[i]) continue;
    current_ = i;
    const NormSums n = norm_sums(parts[i]->w, parts[i]->g, parts[i]->state);
    sums[2 * i] = n.first;
    sums[2 * i + 1] = n.second;
  }
  norm_reducer_(sums);
  for (std::size_t i = 0; i < params_.size(); ++i) {
    if (!parts[i]) continue;
    current_ = i;
    apply_with_norms(parts[i]->w, parts[i]->g, parts[i]->state, {sums[2 * i], sums[2 * i + 1]});
  }
  applied_lr_ = lr_;
  ++steps_;
}

void Optimizer::step_part(int part, int parts) {
  DT_CHECK(parts >= 1 && part >= 0 && part < parts, "step_part({}, {})", part, parts);
  std::vector<Range> ranges;
  for (const Variable& p : params_) {
    const std::int64_t n = p.data().numel();
    ranges.push_back({n * part / parts, n * (part + 1) / parts});
  }
  step_ranges(ranges);
}

bool Optimizer::decays_current() const { return decay_1d_ || params_[current_].data().shape().rank() >= 2; }

void Optimizer::zero_grad() {
  for (Variable& p : params_) p.zero_grad();
}

Tensor& Optimizer::slot(std::size_t slot_index, std::size_t param_index) {
  if (slots_.empty()) slots_.resize(slot_names().size(), std::vector<Tensor>(params_.size()));
  Tensor& t = slots_[slot_index][param_index];
  if (!t.defined()) t = Tensor::zeros_like(params_[param_index].data());
  return t;
}

void Optimizer::ensure_state() {
  for (std::size_t s = 0; s < slot_names().size(); ++s) {
    for (std::size_t i = 0; i < params_.size(); ++i) slot(s, i);
  }
}

void Optimizer::relocate_state(const std::function<Tensor(const Tensor&)>& allocate) {
  ensure_state();
  for (auto& per_param : slots_) {
    for (Tensor& t : per_param) {
      Tensor moved = allocate(t);
      DT_CHECK(moved.shape() == t.shape() && moved.dtype() == t.dtype() && moved.layout() == t.layout(),
               "relocated optimizer state {} differs from {}", moved.describe(), t.describe());
      t = std::move(moved);
    }
  }
}

std::vector<std::pair<std::string, Tensor>> Optimizer::state() {
  ensure_state();
  std::vector<std::pair<std::string, Tensor>> out;
  const auto names = slot_names();
  for (std::size_t s = 0; s < names.size(); ++s) {
    for (std::size_t i = 0; i < params_.size(); ++i) out.emplace_back(fmt::format("{}.{}", names[s], i), slots_[s][i]);
  }
  return out;
}

const std::vector<std::string>& optimizer_names() {
  static const std::vector<std::string> names{"sgd", "rmsprop", "adam", "lars", "lamb", "rmsprop-warmup"};
  return names;
}

namespace {

std::unique_ptr<Optimizer> make_named(const OptimizerConfig& c, std::vector<Variable> params) {
  if (c.weight_decay < 0) throw InputError(fmt::format("--weight-decay must be >= 0, got {}", c.weight_decay));
  if (c.name == "sgd") {
    if (c.momentum < 0 || c.momentum >= 1)
      throw InputError(fmt::format("--momentum must be in [0, 1), got {}", c.momentum));
    return std::make_unique<Sgd>(std::move(params), SgdHyper{c.lr, c.momentum, c.weight_decay, c.nesterov},
                                 c.momentum_correction);
  }
  if (c.name == "rmsprop") {
    return std::make_unique<Rmsprop>(std::move(params), RmspropHyper{c.lr, c.alpha, c.eps, c.weight_decay});
  }
  if (c.name == "adam") {
    AdamHyper h;
    h.lr = c.lr;
    h.beta1 = c.beta1;
    h.beta2 = c.beta2;
    h.eps = c.eps;
    h.weight_decay = c.weight_decay;
    return std::make_unique<Adam>(std::move(params), h);
  }
  if (c.name == "lars") {
    if (c.momentum < 0 || c.momentum >= 1)
      throw InputError(fmt::format("--momentum must be in [0, 1), got {}", c.momentum));
    if (!(c.trust_coefficient > 0)) {
      throw InputError(fmt::format("--trust-coefficient must be > 0 (LARS's eta, 0.001 in You et al. 2017), got {}",
                                   c.trust_coefficient));
    }
    return std::make_unique<Lars>(std::move(params),
                                  LarsHyper{c.lr, c.momentum, c.weight_decay, c.trust_coefficient, c.adapt_all});
  }
  if (c.name == "lamb") {
    return std::make_unique<Lamb>(std::move(params),
                                  LambHyper{c.lr, c.beta1, c.beta2, c.eps, c.weight_decay, c.adapt_all});
  }
  if (c.name == "rmsprop-warmup") {
    RmspropWarmupHyper h;
    h.lr = c.lr;
    h.momentum = c.momentum;
    h.alpha = c.alpha;
    h.eps = c.eps;
    h.weight_decay = c.weight_decay;
    h.rmsprop_lr = c.rmsprop_lr;
    h.centre = c.transition_centre;
    h.period = c.transition_period;
    return std::make_unique<RmspropWarmup>(std::move(params), h);
  }
  throw InputError(fmt::format("unknown optimizer '{}'; valid: {}", c.name, fmt::join(optimizer_names(), ", ")));
}

}  // namespace

std::unique_ptr<Optimizer> make_optimizer(const OptimizerConfig& c, std::vector<Variable> params) {
  std::unique_ptr<Optimizer> o = make_named(c, std::move(params));
  o->set_decay_1d(c.decay_1d);
  return o;
}

}  // namespace dtrain
