// Optimizers update parameters in place from their gradients; the arithmetic of each update is a
// backend kernel (tensor/backend.h), so it runs wherever the parameters live.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "autograd/variable.h"

namespace dtrain {

class Optimizer {
 public:
  Optimizer(std::vector<Variable> params, double lr);
  virtual ~Optimizer() = default;

  // One update of every parameter that has a gradient.
  void step();
  // The same update of a range of every parameter: elements [ranges[i].begin, ranges[i].end) of
  // parameter i's storage, gradient and state (the updates are elementwise, and a parameter, its
  // gradient and its state share one layout). Ranks that share one copy of the weights and the
  // state split the update this way (parallel/shared_weights.h): calls whose ranges cover every
  // element once equal one step(). Each call counts as one step (Adam's bias correction): in a
  // data-parallel step every rank makes one call, on its own optimizer.
  struct Range {
    std::int64_t begin = 0, end = 0;
  };
  void step_ranges(std::span<const Range> ranges);
  // step_ranges with part `part` of `parts` of every parameter: [numel*part/parts,
  // numel*(part+1)/parts).
  void step_part(int part, int parts);
  void zero_grad();
  void set_decay_1d(bool on) { decay_1d_ = on; }
  double lr() const { return lr_; }
  void set_lr(double lr) { lr_ = lr; }
  // The rate of the last step made (0 before the first): momentum SGD's correction scales its
  // velocity by lr() / applied_lr(). A resumed run sets it to the rate of the step before it.
  double applied_lr() const { return applied_lr_; }
  void set_applied_lr(double lr) { applied_lr_ = lr; }
  // Training progress in fractional epochs at the next step, for updates that follow it
  // (rmsprop-warmup's transition); the trainer sets it before each step.
  double progress() const { return progress_; }
  void set_progress(double epoch) { progress_ = epoch; }
  std::int64_t steps() const { return steps_; }
  void set_steps(std::int64_t steps) { steps_ = steps; }
  const std::vector<Variable>& params() const { return params_; }
  virtual std::string name() const = 0;
  // Whether an update needs a whole parameter's norms (LARS, LAMB). step_ranges then updates a
  // range that is part of a parameter only where a norm reducer is set, and refuses it otherwise.
  virtual bool layerwise() const { return false; }
  // Sums values over the ranks that split the update (every rank's step_ranges calls it once per
  // step, with the same count; identical sums on every rank): a layer-wise step over ranges then
  // runs in two halves, each part's sums of squares first, summed over the parts, then the update
  // with the whole tensors' norms. Empty: none (the ranges must be whole parameters).
  using NormReducer = std::function<void(std::vector<double>&)>;
  void set_norm_reducer(NormReducer reducer) { norm_reducer_ = std::move(reducer); }

  // Per-parameter state tensors by name ("momentum.3" = momentum of parameter 3), for
  // checkpoints; allocated on first use, so call after one step or after ensure_state().
  std::vector<std::pair<std::string, Tensor>> state();
  void ensure_state();
  // Moves every state tensor into memory from `allocate` (given the tensor to copy, it returns a
  // tensor of the same shape, dtype and layout); allocates the state first.
  void relocate_state(const std::function<Tensor(const Tensor&)>& allocate);

 protected:
  // Updates w from its gradient g and its state tensors (one per slot_names(), same shape as w).
  virtual void update(Tensor& w, const Tensor& g, std::span<Tensor> state) = 0;
  // The index in params() of the parameter update() is called for.
  std::size_t current_param() const { return current_; }
  // Whether weight decay applies to the parameter update() is called for: every parameter, or with
  // decay_1d off (Goyal et al. 2017, section 5.1) only those of two or more dimensions, not biases
  // and batch-norm scales and shifts.
  bool decays_current() const;
  // Names of the state slots each parameter has ("momentum"; Adam: "m", "v").
  virtual std::vector<std::string> slot_names() const = 0;
  // Layer-wise optimizers, the two halves of update() for a part of the parameter: the part's
  // contributions to the two sums of squares its trust ratio needs (LARS: ||w||^2 and ||g||^2;
  // LAMB: ||w||^2 and ||r||^2, after it updates its moments), then the update with the sums over
  // all parts. update() of a whole parameter is the two in a row.
  struct NormSums {
    double first = 0, second = 0;
  };
  virtual NormSums norm_sums(Tensor& w, const Tensor& g, std::span<Tensor> state);
  virtual void apply_with_norms(Tensor& w, const Tensor& g, std::span<Tensor> state, NormSums whole);

 private:
  Tensor& slot(std::size_t slot_index, std::size_t param_index);
  // Range `r` of parameter i, its gradient (in the weights' layout) and its state, as flat views;
  // nothing where the parameter has no gradient or the range is empty.
  struct ParamPart {
    Tensor g_whole;  // the gradient in the weights' layout, which g views
    Tensor w, g;
    std::vector<Tensor> state;
  };
  std::optional<ParamPart> part_of(std::size_t i, Range r);
  // step_ranges of a layer-wise optimizer with a norm reducer.
  void step_layerwise_ranges(std::span<const Range> ranges);

  std::vector<Variable> params_;
  double lr_;
  double applied_lr_ = 0;
  double progress_ = 0;
  std::int64_t steps_ = 0;
  std::size_t current_ = 0;
  bool decay_1d_ = true;
  NormReducer norm_reducer_;
  std::vector<std::vector<Tensor>> slots_;  // [slot][param]
};

struct OptimizerConfig {
  std::string name = "sgd";  // sgd | rmsprop | adam | lars | lamb | rmsprop-warmup
  double lr = 0.05;
  double momentum = 0.9;  // sgd, lars, rmsprop-warmup
  bool nesterov = false;  // sgd
  double weight_decay = 0.0;
  double alpha = 0.99;  // rmsprop, rmsprop-warmup: decay of the squared-gradient average
  double beta1 = 0.9, beta2 = 0.999;
  double eps = 1e-8;
  bool momentum_correction = true;  // sgd: v = mu*(lr_t/lr_{t-1})*v - lr_t*g (Goyal et al. 2017)
  bool decay_1d = true;  // sgd, rmsprop, adam, rmsprop-warmup: weight decay on biases and batch-norm parameters too
  double trust_coefficient = 0.001;  // lars: eta in eta*||w|| / (||g|| + wd*||w||)
  bool adapt_all = false;            // lars, lamb: adapt (and decay) 1-d parameters too: biases, batch norm
  double rmsprop_lr = 3e-4;          // rmsprop-warmup: the RMSprop share's rate (Akiba et al. 2017)
  double transition_centre = 10;     // rmsprop-warmup: epoch where a_sgd = 1/2
  double transition_period = 5;      // rmsprop-warmup: a_sgd reaches 1 at centre + period / 2
};

// Throws InputError listing the valid names for an unknown optimizer.
std::unique_ptr<Optimizer> make_optimizer(const OptimizerConfig& config, std::vector<Variable> params);
const std::vector<std::string>& optimizer_names();

}  // namespace dtrain
