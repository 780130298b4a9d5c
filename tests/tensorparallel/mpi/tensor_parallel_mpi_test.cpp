// Tensor parallelism over the MPI transport (mpirun -np T, T = 2 and 4): lenet split by
// parallelize() trains 3 momentum-SGD steps, and every rank's parameters then equal its block of
// the whole model's, trained alike in each process.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cmath>

#include "autograd/ops.h"
#include "comm/mpi/mpi_transport.h"
#include "core/random.h"
#include "core/threads.h"
#include "nn/models/models.h"
#include "optim/optimizer.h"
#include "tensorparallel/parallelize.h"

namespace dtrain::tensorparallel {
namespace {

std::shared_ptr<Module> build() {
  Rng rng(5);
  return make_model("lenet", {1, 28, 28, 10}, rng);
}

void train_three_steps(Module& model, const Tensor& x, const Tensor& y) {
  OptimizerConfig config;
  config.lr = 0.05;
  auto opt = make_optimizer(config, model.parameters());
  for (int step = 0; step < 3; ++step) {
    opt->zero_grad();
    ops::softmax_cross_entropy(model(Variable(x)), y).backward();
    opt->step();
  }
}

TEST(TensorParallelMpi, LenetSplitOverTheRanksTrainsAsTheWholeModel) {
  set_num_threads(1);
  auto transport = comm::make_mpi_transport();
  comm::Communicator comm(*transport);
  Rng rng(3);
  std::vector<float> xs(16 * 784);
  for (float& v : xs) v = static_cast<float>(rng.uniform(0, 1));
  std::vector<std::int32_t> ys(16);
  for (auto& v : ys) v = static_cast<std::int32_t>(rng.below(10));
  const Tensor x = Tensor::from_vector(xs, {16, 1, 28, 28}), y = Tensor::from_labels(ys);

  auto whole = build();
  train_three_steps(*whole, x, y);
  std::map<std::string, Tensor> want;
  for (auto& [name, p] : whole->named_parameters()) want[name] = p.data().to_plain().clone();

  auto mine = build();
  auto parallel = parallelize(dynamic_cast<const Sequential&>(*mine), comm);
  train_three_steps(*parallel, x, y);
  for (auto& [name, p] : parallel->named_parameters()) {
    const auto got = p.data().to_plain().to_vector();
    const auto expected = part_of(want.at(name), p.shape(), comm.rank(), comm.size()).to_plain().to_vector();
    ASSERT_EQ(got.size(), expected.size()) << name;
    double worst = 0;
    for (std::size_t i = 0; i < got.size(); ++i) worst = std::max(worst, std::abs(double(got[i]) - expected[i]));
    EXPECT_LE(worst, 1e-5) << name << " at T = " << comm.size();
  }
}

}  // namespace
}  // namespace dtrain::tensorparallel
