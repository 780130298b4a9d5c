#include "train/updater.h"

#include <cmath>

#include "autograd/ops/loss.h"
#include "core/timer.h"

namespace dtrain {

Variable StandardUpdater::forward_loss(const Batch& batch, std::int64_t iteration, StepResult& r) {
  Stopwatch sw;
  Variable logits = model_(Variable(batch.x));
  Variable loss = ops::softmax_cross_entropy(logits, batch.y);
  r.loss = loss.data().item();
  r.correct = ops::count_correct(logits.data(), batch.y);
  r.samples = batch.y.numel();
  r.times.forward = sw.seconds();
  if (!std::isfinite(r.loss)) {
    throw NumericError(
        fmt::format("the loss became {} at step {} (0-based global iteration); training stopped before the update. "
                    "Lower --lr, add --warmup-epochs, or check the input data",
                    r.loss, iteration));
  }
  return loss;
}

StepResult StandardUpdater::forward_backward(const Batch& batch, std::int64_t iteration) {
  StepResult r;
  Variable loss = forward_loss(batch, iteration, r);
  const Stopwatch sw;
  optimizer_.zero_grad();
  loss.backward();
  r.times.backward = sw.seconds();
  return r;
}

StepResult StandardUpdater::update(const Batch& batch, std::int64_t iteration) {
  StepResult r = forward_backward(batch, iteration);
  const Stopwatch sw;
  optimizer_.step();
  r.times.update = sw.seconds();
  return r;
}

}  // namespace dtrain
