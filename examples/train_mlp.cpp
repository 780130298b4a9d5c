// Defines a small model with the library API and trains it on Fashion-MNIST.
// usage: example_train_mlp [DATA_DIR] [EPOCHS] [LIMIT]
#include <cstdio>
#include <string>

#include "autograd/ops.h"
#include "core/random.h"
#include "data/dataset.h"
#include "data/loader.h"
#include "nn/activation.h"
#include "nn/linear.h"
#include "nn/sequential.h"
#include "optim/optimizer.h"
#include "train/evaluator.h"

int main(int argc, char** argv) try {
  using namespace dtrain;
  const std::string dir = argc > 1 ? argv[1] : "";
  const int epochs = argc > 2 ? std::stoi(argv[2]) : 1;
  Dataset train = load_dataset("fashion-mnist", dir, "train");
  if (argc > 3) train = subset(train, 0, std::stoll(argv[3]));
  const Dataset test = load_dataset("fashion-mnist", dir, "test");

  Rng rng(0);
  Sequential model;
  model.add(std::make_shared<Flatten>());
  model.add(std::make_shared<Linear>(28 * 28, 128, true, rng));
  model.add(std::make_shared<ReLU>());
  model.add(std::make_shared<Linear>(128, 10, true, rng));

  OptimizerConfig sgd;  // momentum SGD: v = 0.9 v - 0.05 g; w += v
  auto optimizer = make_optimizer(sgd, model.parameters());
  const Sampler sampler(train.size(), SamplerConfig::train(/*batch=*/64, /*seed=*/0));

  for (int epoch = 0; epoch < epochs; ++epoch) {
    Loader loader(train, sampler, epoch);
    while (auto batch = loader.next()) {
      Variable loss = ops::softmax_cross_entropy(model(Variable(batch->x)), batch->y);
      optimizer->zero_grad();
      loss.backward();
      optimizer->step();
    }
    const EvalResult r = evaluate(model, test, Sampler(test.size(), SamplerConfig::eval(1000)), {});
    std::printf("epoch %d: test accuracy %.4f\n", epoch + 1, r.accuracy);
  }
  return 0;
} catch (const std::exception& e) {
  std::fprintf(stderr, "error: %s\n", e.what());
  return 1;
}
