#include "train/updater.h"

#include <cmath>

#include "autograd/ops/loss.h"
#include "core/error.h"
#include "core/timer.h"

namespace dtrain {

Variable StandardUpdater::forward_loss(const Batch& batch, std::int64_t iteration, StepResult& r) {
  Stopwatch sw;
  Variable logits = model_(Variable(batch.x));
  Variable loss = ops::softmax_cross_entropy(logits, batch.y, label_smoothing());
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

StepResult StandardUpdater::forward_backward(const Batch& batch, std::int64_t iteration, int micro_batches) {
  if (micro_batches == 1) return forward_backward(batch, iteration);
  const std::int64_t n = batch.x.size(0);
  if (micro_batches < 1 || n % micro_batches != 0) {
    throw InputError(fmt::format("--accumulate {} must divide the batch {} evenly", micro_batches, n));
  }
  StepResult r;
  optimizer_.zero_grad();
  double loss_sum = 0;
  for (int m = 0; m < micro_batches; ++m) {
    const std::int64_t lo = n / micro_batches * m, hi = n / micro_batches * (m + 1);
    const Batch slice{batch.x.slice_rows(lo, hi), batch.y.slice_rows(lo, hi), {}};
    StepResult part;
    Variable loss = forward_loss(slice, iteration, part);
    const Stopwatch sw;
    loss.backward();  // adds into the gradients of the slices before
    r.times.backward += sw.seconds();
    r.times.forward += part.times.forward;
    r.correct += part.correct;
    loss_sum += part.loss;
  }
  r.loss = loss_sum / micro_batches;
  r.samples = n;
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
