#include "ps/ps_updater.h"

#include <utility>

#include "core/error.h"
#include "core/timer.h"

namespace dtrain::ps {

PsUpdater::PsUpdater(Module& model, Optimizer& optimizer, comm::Transport& transport, const PsConfig& config)
    : StandardUpdater(model, optimizer), params_(model.parameters()) {
  std::vector<std::int64_t> sizes;
  for (const Variable& p : params_) {
    // Parameters are plain f32 (docs/design.md), so the flat order is the storage order.
    DT_CHECK(p.data().dtype() == DType::kF32 && p.data().layout() == Layout::kPlain,
             "parameter-server training needs plain f32 parameters, not {}", p.data().describe());
    sizes.push_back(p.data().numel());
    weights_.push_back(p.data().data<float>());
    zeros_.push_back(Tensor::zeros_like(p.data()));
  }
  worker_ = std::make_unique<PsWorker>(transport, config, std::move(sizes));
  worker_->start(weights_);
}

StepResult PsUpdater::update(const Batch& batch, std::int64_t iteration) {
  StepResult r = forward_backward(batch, iteration);
  const Stopwatch sw;
  std::vector<Tensor> grads;  // held while the pointers into them are used
  std::vector<const float*> from;
  for (std::size_t i = 0; i < params_.size(); ++i) {
    const Tensor& g = params_[i].grad();
    grads.push_back(g.defined() ? g.to_plain() : zeros_[i]);
    from.push_back(grads.back().data<float>());
  }
  worker_->step(from, optimizer_.lr(), weights_);
  r.times.comm = sw.seconds();
  return r;
}

}  // namespace dtrain::ps
