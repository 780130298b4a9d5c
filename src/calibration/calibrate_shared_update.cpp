#include "calibration/calibrate_shared_update.h"

#include <algorithm>

#include "autograd/ops/loss.h"
#include "calibration/calibrate_compute.h"
#include "comm/bucket_plan.h"
#include "core/error.h"
#include "core/timer.h"
#include "optim/optimizer.h"
#include "parallel/shared_weights.h"

namespace dtrain::perf {
namespace {

// The bucket size `dtrain train` defaults to (--bucket-mb 1): it decides each rank's part.
constexpr std::size_t kBucketBytes = 1 << 20;

void barrier(CommWorker& worker) {
  worker.run([](comm::Communicator& c) { c.barrier(); });
}

struct Timed {
  double params = 0, seconds = 0;
};

// The median seconds of the shared update of one model's parameters.
Timed shared_update_seconds(CommWorker& worker, const std::string& name, std::int64_t batch, int calls) {
  const ModelInput in = natural_input(name);
  Rng rng(1);
  auto model = make_model(name, in, rng);
  std::vector<Variable> params = model->parameters();
  std::vector<std::int64_t> numels;
  std::vector<Tensor> gradients;
  for (const Variable& p : params) {
    numels.push_back(p.data().numel());
    // Fixed small gradients, as update_seconds (calibrate_compute.cpp) applies.
    gradients.push_back(Tensor::full(p.shape(), 1e-6));
  }
  auto optimizer = make_optimizer(OptimizerConfig{}, params);
  SharedWeights shared(params, *optimizer, worker, plan_buckets(numels, kBucketBytes, false));
  const Tensor x = Tensor::full(Shape({batch, in.channels, in.height, in.width}), 0.5f);
  const Tensor labels = Tensor::zeros(Shape({batch}), DType::kI32);
  std::vector<double> seconds;
  for (int call = 0; call < calls + 2; ++call) {
    optimizer->zero_grad();
    ops::softmax_cross_entropy((*model)(Variable(x)), labels).backward();
    for (std::size_t k = 0; k < params.size(); ++k) params[k].set_grad(gradients[k]);
    barrier(worker);  // as the step's barrier after the last bucket
    const Stopwatch sw;
    shared.update();
    if (call >= 2) seconds.push_back(sw.seconds());
  }
  std::sort(seconds.begin(), seconds.end());
  return {static_cast<double>(model->num_parameters()), seconds[seconds.size() / 2]};
}

}  // namespace

double shared_update_rate(CommWorker& worker, const std::vector<std::string>& models, std::int64_t batch, int calls) {
  DT_CHECK(calls > 0 && !models.empty(), "shared update: {} calls over {} models", calls, models.size());
  Timed all;
  for (const std::string& name : models) {
    const Timed t = shared_update_seconds(worker, name, batch, calls);
    all.params += t.params;
    all.seconds += t.seconds;
  }
  return all.params / all.seconds;
}

}  // namespace dtrain::perf
