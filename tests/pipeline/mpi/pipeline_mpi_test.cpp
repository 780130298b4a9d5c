// Pipelines over the MPI transport, one stage per process (mpirun -np K, K = 2..4): both
// schedules with every micro-batch count 1..8 (m < K included) end, and each stage's gradients
// equal those of the unsplit model, which every process also computes.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cmath>

#include "autograd/ops.h"
#include "comm/mpi/mpi_transport.h"
#include "core/random.h"
#include "core/threads.h"
#include "nn/models/models.h"
#include "pipeline/p2p.h"
#include "pipeline/stage_runner.h"
#include "pipeline/stages.h"

namespace dtrain::pipeline {
namespace {

std::shared_ptr<Sequential> build() {
  Rng rng(9);
  return std::dynamic_pointer_cast<Sequential>(make_model("mlp", {1, 28, 28, 10}, rng));
}

TEST(PipelineMpi, EveryScheduleAndMicroBatchCountEqualsTheUnsplitStep) {
  set_num_threads(1);
  auto transport = comm::make_mpi_transport();
  const int k = transport->size(), s = transport->rank();
  constexpr std::int64_t kRows = 840;  // lcm(1..8)
  Rng rng(4);
  std::vector<float> xs(static_cast<std::size_t>(kRows * 784));
  for (float& v : xs) v = static_cast<float>(rng.normal());
  std::vector<std::int32_t> ys(static_cast<std::size_t>(kRows));
  for (auto& v : ys) v = static_cast<std::int32_t>(rng.below(10));
  const Tensor x = Tensor::from_vector(xs, {kRows, 1, 28, 28}), y = Tensor::from_labels(ys);

  auto whole = build();
  ops::softmax_cross_entropy((*whole)(Variable(x)), y).backward();
  std::map<std::string, std::vector<float>> want;
  for (auto& [name, p] : whole->named_parameters()) want[name] = p.grad().to_plain().to_vector();

  for (auto kind : {ScheduleKind::kGPipe, ScheduleKind::kOneFOneB})
    for (int m = 1; m <= 8; ++m) {
      auto net = build();
      const StageBounds bounds = split_balanced(std::vector<double>(net->size(), 1.0), k);
      const auto shapes = boundary_shapes(*net, bounds, {1, 28, 28});
      auto stage = make_stage(*net, bounds[s], bounds[s + 1]);
      P2P p2p(*transport, 60);
      StageRunner runner(*stage, p2p, {kind, k, s, m, s - 1, s + 1, shapes[static_cast<std::size_t>(s)]});
      const StageStep r = runner.run(x, y);
      EXPECT_EQ(r.peak_in_flight, kind == ScheduleKind::kGPipe ? m : std::min(k - s, m));
      for (auto& [name, p] : stage->named_parameters()) {
        const auto got = p.grad().to_plain().to_vector();
        const auto& ref = want.at(name);
        double worst = 0, scale = 0;
        for (std::size_t i = 0; i < got.size(); ++i) {
          worst = std::max(worst, std::abs(double(got[i]) - ref[i]));
          scale = std::max(scale, std::abs(double(ref[i])));
        }
        EXPECT_LE(worst, 1e-5 * scale) << schedule_name(kind) << " m=" << m << " " << name;
      }
    }
}

}  // namespace
}  // namespace dtrain::pipeline
