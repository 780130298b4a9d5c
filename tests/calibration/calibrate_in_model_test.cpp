// Layer times inside a model's own steps (calibration/calibrate_in_model.h): every layer with work
// is timed once per step, the composite's own ops included, with the costs the model prices it
// by; the spans never count a moment twice.
#include "calibration/calibrate_in_model.h"

#include <gtest/gtest.h>

#include <numeric>
#include <set>

#include "core/error.h"
#include "core/timer.h"
#include "perfmodel/layer_cost.h"
#include "perfmodel/layer_trace.h"

namespace dtrain::perf {
namespace {

DeviceProfile memory_rates() {
  DeviceProfile d;
  d.memory_read.value = 40e9;
  d.memory_write.value = 20e9;
  for (Quantity& c : d.compute) c.value = 1e30;
  return d;
}

TEST(CalibrateInModel, EveryLayerWithWorkIsTimedWithTheCostsTheModelPricesItBy) {
  const std::int64_t batch = 4;
  const DeviceProfile memory = memory_rates();
  const ModelInput in = natural_input("resnet20");
  Rng rng(1);
  auto model = make_model("resnet20", in, rng);
  std::vector<LayerSummary> layers = trace_layers(*model, Shape{in.channels, in.height, in.width});
  std::erase_if(layers, [](const LayerSummary& l) { return l.forward_flops <= 0; });

  const std::vector<ShapeTiming> timed = time_layers_in_steps("resnet20", batch, memory, 3, 1, 0.0);
  ASSERT_EQ(timed.size(), layers.size());
  std::set<std::string> kinds;
  for (std::size_t i = 0; i < layers.size(); ++i) {
    const LayerSummary& l = layers[i];
    const ShapeTiming& t = timed[i];
    EXPECT_EQ(t.kind, l.kind) << l.path;
    EXPECT_EQ(t.shape.rfind(l.path + " ", 0), 0u) << t.shape;
    EXPECT_EQ(t.layers, 1);
    EXPECT_DOUBLE_EQ(t.flops, static_cast<double>(batch) * (l.forward_flops + l.backward_flops)) << l.path;
    const LayerTime floor = layer_time(l, batch, memory);
    EXPECT_DOUBLE_EQ(t.memory_seconds, floor.forward.seconds + floor.backward.seconds) << l.path;
    EXPECT_GT(t.seconds, 0) << l.path;
    kinds.insert(t.kind);
  }
  // The residual blocks' own additions and ReLUs are layers of the step like the modules.
  for (const char* kind : {"conv2d", "batch_norm", "relu", "add", "global_avg_pool", "linear"})
    EXPECT_TRUE(kinds.contains(kind)) << kind;
}

// Each timed step's spans lie within the step, one after the other: the layers' times summed over
// a round's steps never exceed the wall time of the whole call.
TEST(CalibrateInModel, TheLayersOfAStepSumToNoMoreThanTheStep) {
  const int rounds = 3, steps = 4;
  const Stopwatch wall;
  const std::vector<ShapeTiming> timed = time_layers_in_steps("lenet", 16, memory_rates(), rounds, steps, 0.0);
  const double call = wall.seconds();
  ASSERT_FALSE(timed.empty());
  const double per_step =
      std::accumulate(timed.begin(), timed.end(), 0.0, [](double s, const ShapeTiming& t) { return s + t.seconds; });
  EXPECT_GT(per_step, 0);
  // Each layer's time is a round's mean per step (the median round), and every round's steps lie
  // inside the call.
  EXPECT_LE(per_step * steps, call);
}

TEST(CalibrateInModel, AnUnknownModelIsNamed) {
  try {
    time_layers_in_steps("resnet7", 4, memory_rates(), 1, 1, 0.0);
    FAIL() << "no error";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("resnet7"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace dtrain::perf
