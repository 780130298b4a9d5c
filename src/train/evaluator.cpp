#include "train/evaluator.h"

#include "autograd/ops/loss.h"
#include "core/timer.h"

namespace dtrain {

EvalResult evaluate(Module& model, const Dataset& data, const Sampler& sampler, const LoaderOptions& options,
                    const SumAcrossRanks& sum_across_ranks) {
  Stopwatch sw;
  const bool was_training = model.training();
  model.eval();
  NoGradGuard no_grad;
  std::vector<double> sums{0, 0, 0};  // loss * samples, correct, samples
  {
    Loader loader(data, sampler, 0, options);
    while (auto batch = loader.next()) {
      Variable logits = model(Variable(batch->x));
      const double loss = ops::softmax_cross_entropy(logits, batch->y).data().item();
      const auto n = static_cast<double>(batch->y.numel());
      sums[0] += loss * n;
      sums[1] += static_cast<double>(ops::count_correct(logits.data(), batch->y));
      sums[2] += n;
    }
  }
  model.train(was_training);
  if (sum_across_ranks) sum_across_ranks(sums);
  EvalResult r;
  r.samples = static_cast<std::int64_t>(sums[2]);
  r.correct = static_cast<std::int64_t>(sums[1]);
  r.loss = sums[2] > 0 ? sums[0] / sums[2] : 0;
  r.accuracy = sums[2] > 0 ? sums[1] / sums[2] : 0;
  r.seconds = sw.seconds();
  return r;
}

}  // namespace dtrain
