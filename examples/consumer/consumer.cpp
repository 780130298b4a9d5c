// Uses an installed dtrain from another project: trains a small network on two Gaussian blobs
// with the define-by-run API, then asks the performance model what one step of it would cost on
// 1 and 8 workers of a built-in hardware profile. Exits 1 if the loss did not fall.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "autograd/ops.h"
#include "core/error.h"
#include "core/random.h"
#include "nn/activation.h"
#include "nn/linear.h"
#include "nn/sequential.h"
#include "optim/optimizer.h"
#include "perfmodel/profile.h"
#include "perfmodel/step_model.h"
#include "perfmodel/workload.h"

namespace {

constexpr int kBatch = 64;
constexpr int kFeatures = 8;

// A batch of points from two Gaussian blobs centred at -1 and +1 in every coordinate; the label
// is the blob.
void blobs(dtrain::Rng& rng, std::vector<float>& x, std::vector<std::int32_t>& y) {
  x.resize(std::size_t{kBatch} * kFeatures);
  y.resize(kBatch);
  for (int i = 0; i < kBatch; ++i) {
    y[static_cast<std::size_t>(i)] = static_cast<std::int32_t>(rng.below(2));
    const double centre = y[static_cast<std::size_t>(i)] == 1 ? 1.0 : -1.0;
    for (int j = 0; j < kFeatures; ++j)
      x[static_cast<std::size_t>(i * kFeatures + j)] = static_cast<float>(rng.normal(centre, 1.0));
  }
}

}  // namespace

int main() try {
  using namespace dtrain;
  Rng rng(0);
  Sequential model;
  model.add(std::make_shared<Linear>(kFeatures, 16, true, rng));
  model.add(std::make_shared<ReLU>());
  model.add(std::make_shared<Linear>(16, 2, true, rng));
  auto optimizer = make_optimizer(OptimizerConfig{}, model.parameters());

  std::vector<float> x;
  std::vector<std::int32_t> y;
  double first = 0, last = 0;
  for (int step = 0; step < 50; ++step) {
    blobs(rng, x, y);
    Variable loss = ops::softmax_cross_entropy(model(Variable(Tensor::from_vector(x, Shape{kBatch, kFeatures}))),
                                               Tensor::from_labels(y));
    optimizer->zero_grad();
    loss.backward();
    optimizer->step();
    last = loss.data().item();
    if (step == 0) first = last;
  }
  std::printf("loss: %.4f at the first step, %.4f at the 50th\n", first, last);

  setenv("DTRAIN_PROFILES", DTRAIN_PROFILES_DIR, 0);
  const perf::Workload work = perf::describe_model(model, Shape{kFeatures}, "blobs-mlp");
  const perf::Profile profile = perf::load_profile("skylake-sp+eth-10g");
  for (int workers : {1, 8}) {
    perf::RunConfig config;
    config.workers = workers;
    config.batch_per_worker = kBatch;
    const perf::StepPrediction s = perf::predict_step(work, profile, config);
    std::printf("predicted step on %d worker(s) of %s: %.1f us (bottleneck: %s)\n", workers, profile.name.c_str(),
                s.step * 1e6, s.bottleneck.c_str());
  }
  return last < first ? 0 : 1;
} catch (const dtrain::Error& e) {
  std::fprintf(stderr, "consumer: %s\n", e.what());
  return 2;
}
