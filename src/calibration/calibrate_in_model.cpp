#include "calibration/calibrate_in_model.h"

#include <fmt/format.h>

#include <algorithm>
#include <limits>
#include <map>

#include "autograd/ops/loss.h"
#include "core/error.h"
#include "core/random.h"
#include "core/timer.h"
#include "perfmodel/layer_cost.h"
#include "perfmodel/layer_trace.h"
#include "perfmodel/timing_stats.h"
#include "train/trace_recorder.h"

namespace dtrain::perf {
namespace {

constexpr int kUntimedSteps = 2;
constexpr std::int64_t kMaxStepsPerRound = 100000;

// Random samples and labels of one batch at the model's natural input, plain NCHW as the data
// pipeline hands them to the model.
struct Batch {
  Tensor samples, labels;
};

Batch random_batch(const ModelInput& in, std::int64_t batch, Rng& rng) {
  const Shape shape({batch, in.channels, in.height, in.width});
  std::vector<float> values(static_cast<std::size_t>(shape.numel()));
  for (float& v : values) v = static_cast<float>(rng.uniform(-1, 1));
  std::vector<std::int32_t> classes(static_cast<std::size_t>(batch));
  for (std::int32_t& c : classes) c = static_cast<std::int32_t>(rng.below(static_cast<std::uint64_t>(in.classes)));
  return {Tensor::from_vector(values, shape), Tensor::from_labels(classes)};
}

void train_step(Module& model, std::vector<Variable>& params, const Batch& data) {
  for (Variable& p : params) p.zero_grad();
  ops::softmax_cross_entropy(model(Variable(data.samples)), data.labels).backward();
}

// One round: steps under a recorder whose window is open from its first step (one epoch that
// never ends), until `min_steps` and `seconds` are reached; each span's mean seconds per step.
std::map<std::string, double> time_round(Module& model, std::vector<Variable>& params, const Batch& data, int min_steps,
                                         double seconds) {
  TraceRecorder recorder(model, 0, 0, std::numeric_limits<std::int64_t>::max() / 2);
  recorder.install();
  TrainerState state;
  state.iterations_per_epoch = std::numeric_limits<std::int64_t>::max();
  state.epoch_iteration = 1;
  recorder.on_start(state);
  const Stopwatch round;
  while (state.iteration < kMaxStepsPerRound && (state.iteration < min_steps || round.seconds() < seconds)) {
    train_step(model, params, data);
    ++state.iteration;
    ++state.epoch_iteration;
    recorder.on_iteration(state);
  }
  std::map<std::string, double> per_step;
  for (const TraceEvent& e : recorder.events()) {
    if (e.category == "forward" || e.category == "backward")
      per_step[e.name] += e.duration / static_cast<double>(state.iteration);
  }
  return per_step;
}

}  // namespace

std::vector<ShapeTiming> time_layers_in_steps(const std::string& name, std::int64_t batch, const DeviceProfile& memory,
                                              int rounds, int min_steps, double seconds_per_round) {
  DT_CHECK(rounds >= 1 && min_steps >= 1, "in-model timing needs a round and a step, got {} and {}", rounds, min_steps);
  Rng rng(1);
  const ModelInput in = natural_input(name);
  auto model = make_model(name, in, rng);
  const std::vector<LayerSummary> layers = trace_layers(*model, Shape{in.channels, in.height, in.width});
  const Batch data = random_batch(in, batch, rng);
  std::vector<Variable> params = model->parameters();
  for (int k = 0; k < kUntimedSteps; ++k) train_step(*model, params, data);
  std::vector<std::map<std::string, double>> per_round;
  per_round.reserve(static_cast<std::size_t>(rounds));
  for (int r = 0; r < rounds; ++r) per_round.push_back(time_round(*model, params, data, min_steps, seconds_per_round));

  std::vector<ShapeTiming> timings;
  for (const LayerSummary& l : layers) {
    if (l.forward_flops <= 0) continue;
    std::vector<double> seconds;
    for (const auto& round : per_round) {
      const auto it = round.find(l.path);
      DT_CHECK(it != round.end(), "{}'s layer {} ran in no recorded step", name, l.path);
      seconds.push_back(it->second);
    }
    ShapeTiming t;
    t.kind = l.kind;
    t.shape = fmt::format("{} {} {}->{}", l.path, l.kind, l.input.str(), l.output.str());
    t.flops = static_cast<double>(batch) * (l.forward_flops + l.backward_flops);
    const LayerTime floor = layer_time(l, batch, memory);
    t.memory_seconds = floor.forward.seconds + floor.backward.seconds;
    t.seconds = median(seconds);
    timings.push_back(std::move(t));
  }
  return timings;
}

}  // namespace dtrain::perf
