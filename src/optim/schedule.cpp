#include "optim/schedule.h"

#include <cmath>
#include <numbers>

#include "core/error.h"

namespace dtrain {
namespace {

class ConstantLr : public LrSchedule {
 public:
  explicit ConstantLr(double base) : base_(base) {}
  double lr(double) const override { return base_; }

 private:
  double base_;
};

// lr = base * gamma^floor(epoch / step)
class StepLr : public LrSchedule {
 public:
  StepLr(double base, double step, double gamma) : base_(base), step_(step), gamma_(gamma) {}
  double lr(double epoch) const override { return base_ * std::pow(gamma_, std::floor(epoch / step_)); }

 private:
  double base_, step_, gamma_;
};

// SGDR without restarts (Loshchilov & Hutter 2017): min + (base - min) * (1 + cos(pi t / T)) / 2
class CosineLr : public LrSchedule {
 public:
  CosineLr(double base, double total, double min) : base_(base), total_(total), min_(min) {}
  double lr(double epoch) const override {
    const double t = std::min(epoch / total_, 1.0);
    return min_ + (base_ - min_) * (1 + std::cos(std::numbers::pi * t)) / 2;
  }

 private:
  double base_, total_, min_;
};

// Akiba et al. 2017's slow-start schedule, stated for 90 epochs and stretched here to `total`:
// 0.5 x base for the first 40, 0.075 x for the next 30, 0.01 x for the next 15, 0.001 x for the last
// 5 (base = 0.1 x global batch / 256 in the paper: --lr 0.1 --lr-scaling linear --base-batch 256).
class SlowStartLr : public LrSchedule {
 public:
  SlowStartLr(double base, double total) : base_(base), total_(total) {}
  double lr(double epoch) const override {
    const double e = epoch * 90 / total_;  // the paper's epoch
    const double factor = e < 40 ? 0.5 : e < 70 ? 0.075 : e < 85 ? 0.01 : 0.001;
    return base_ * factor;
  }

 private:
  double base_, total_;
};

// Gradual warmup: from start_factor * lr(0) rising linearly to the inner schedule at `epochs`.
class LinearWarmup : public LrSchedule {
 public:
  LinearWarmup(std::unique_ptr<LrSchedule> inner, double epochs, double start_factor)
      : inner_(std::move(inner)), epochs_(epochs), start_(start_factor) {}
  double lr(double epoch) const override {
    if (epoch >= epochs_) return inner_->lr(epoch);
    const double f = start_ + (1 - start_) * epoch / epochs_;
    return f * inner_->lr(epoch);
  }

 private:
  std::unique_ptr<LrSchedule> inner_;
  double epochs_, start_;
};

}  // namespace

double lr_at_iteration(const LrSchedule& schedule, std::int64_t iteration, std::int64_t per_epoch) {
  return schedule.lr(static_cast<double>(iteration / per_epoch) +
                     static_cast<double>(iteration % per_epoch) / static_cast<double>(per_epoch));
}

const std::vector<std::string>& schedule_names() {
  static const std::vector<std::string> names{"constant", "step", "cosine", "slow-start"};
  return names;
}

std::unique_ptr<LrSchedule> make_schedule(const ScheduleConfig& c) {
  std::unique_ptr<LrSchedule> s;
  if (c.name == "constant") {
    s = std::make_unique<ConstantLr>(c.base_lr);
  } else if (c.name == "step") {
    if (c.step_epochs <= 0) throw InputError(fmt::format("--step-epochs must be > 0, got {}", c.step_epochs));
    s = std::make_unique<StepLr>(c.base_lr, c.step_epochs, c.gamma);
  } else if (c.name == "cosine") {
    if (c.total_epochs <= 0) throw InputError("cosine schedule needs a positive number of epochs");
    s = std::make_unique<CosineLr>(c.base_lr, c.total_epochs, c.min_lr);
  } else if (c.name == "slow-start") {
    if (c.total_epochs <= 0) throw InputError("slow-start schedule needs a positive number of epochs");
    s = std::make_unique<SlowStartLr>(c.base_lr, c.total_epochs);
  } else {
    throw InputError(fmt::format("unknown schedule '{}'; valid: {}", c.name, fmt::join(schedule_names(), ", ")));
  }
  if (c.warmup_epochs < 0) throw InputError(fmt::format("--warmup-epochs must be >= 0, got {}", c.warmup_epochs));
  if (c.warmup_epochs > 0) s = std::make_unique<LinearWarmup>(std::move(s), c.warmup_epochs, c.warmup_start_factor);
  return s;
}

}  // namespace dtrain
