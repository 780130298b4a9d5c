#include "calibration/calibrate_compute.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <optional>

#include "autograd/ops/elementwise.h"
#include "autograd/ops/loss.h"
#include "calibration/calibrate_in_model.h"
#include "comm/reduce.h"
#include "core/error.h"
#include "core/timer.h"
#include "nn/activation.h"
#include "nn/batch_norm.h"
#include "nn/conv2d.h"
#include "nn/linear.h"
#include "nn/models/models.h"
#include "nn/sequential.h"
#include "optim/optimizer.h"
#include "parallel/buckets.h"
#include "perfmodel/layer_cost.h"
#include "perfmodel/layer_trace.h"
#include "perfmodel/straggler.h"
#include "perfmodel/tensor_parallel_cost.h"
#include "perfmodel/timing_stats.h"
#include "tensor/backend.h"
#include "tensor/dtype.h"
#include "tensor/kernels/cpu/compute_precision.h"

namespace dtrain::perf {
namespace {

constexpr std::size_t kMinStreamBytes = std::size_t{1} << 20;
constexpr std::size_t kDiskBytes = std::size_t{64} << 20;
constexpr int kMinCalls = 5, kMaxCalls = 10000, kWarmupCalls = 2;
// Compute steps timed for their variation: at least kMinSteps and for kStepSeconds x min_seconds.
constexpr std::size_t kMinSteps = 12, kMaxSteps = 400;
constexpr double kStepSeconds = 5;
// A model's steps timed layer by layer: in `rounds` rounds, each at least kMinModelSteps steps and
// a share of kModelSeconds x min_seconds.
constexpr int kMinModelSteps = 2;
constexpr double kModelSeconds = 10;

void sync(const ComputeCalibrationOptions& o) {
  if (o.barrier) o.barrier();
}

// Mean seconds of `call` after warm-up calls, repeated until min_seconds of calls were measured
// (or 4x that of wall time), `before_each` (untimed) ahead of every timed call. The mean, not the
// median: on a shared machine a short call often fits between two preemptions, so its median
// misses the share of the cores a long training loop really gets.
template <typename F, typename G = void (*)()>
double time_calls(
    F&& call, double min_seconds, G&& before_each = [] {}) {
  for (int i = 0; i < kWarmupCalls; ++i) call();
  int calls = 0;
  double measured = 0;
  const Stopwatch wall;
  while (calls < kMinCalls || (measured < min_seconds && wall.seconds() < 4 * min_seconds && calls < kMaxCalls)) {
    before_each();
    const Stopwatch sw;
    call();
    measured += sw.seconds();
    ++calls;
  }
  return measured / calls;
}

// XOR of one byte in every 64 (a cache line each): reading them brings `bytes` into the caches.
std::uint8_t read_lines(const std::uint8_t* data, std::size_t bytes) {
  std::uint8_t x = 0;
  for (std::size_t b = 0; b < bytes; b += 64) x ^= data[b];
  return x;
}

std::string describe(const LayerSummary& l) {
  std::string s = fmt::format("{} {}->{}", l.kind, l.input.str(), l.output.str());
  if (l.kernel > 0) s += fmt::format(" k{}/s{}/p{}", l.kernel, l.stride, l.padding);
  return s;
}

bool first_weighted_layer(const LayerSummary& l) {
  return (l.kind == "conv2d" || l.kind == "linear") && l.backward_flops == l.forward_flops;
}

// The last-level cache of this CPU (sysconf; 32 MiB where it does not say).
std::size_t last_level_cache_bytes() {
  long bytes = ::sysconf(_SC_LEVEL3_CACHE_SIZE);
  if (bytes <= 0) bytes = ::sysconf(_SC_LEVEL2_CACHE_SIZE);
  return bytes > 0 ? static_cast<std::size_t>(bytes) : std::size_t{32} << 20;
}

// Bytes of the activations one forward of `layers` writes at `batch` (every layer's output).
std::size_t activation_bytes(const std::vector<LayerSummary>& layers, std::int64_t batch) {
  double bytes = 0;
  for (const LayerSummary& l : layers)
    bytes += 4.0 * static_cast<double>(batch) * static_cast<double>(l.output.numel());
  return static_cast<std::size_t>(bytes);
}

}  // namespace

ModelInput natural_input(const std::string& model) {
  if (model == "resnet50") return {3, 224, 224, 1000};
  if (model.rfind("resnet", 0) == 0) return {3, 32, 32, 10};
  return {1, 28, 28, 10};
}

LayerCall make_layer(const LayerSummary& l, Rng& rng) {
  std::shared_ptr<Module> m;
  if (l.kind == "conv2d") {
    const bool bias = l.params > l.in_channels * l.out_channels * l.kernel * l.kernel;
    m = std::make_shared<Conv2d>(l.in_channels, l.out_channels, l.kernel, l.stride, l.padding, bias, rng);
  } else if (l.kind == "linear") {
    m = std::make_shared<Linear>(l.in_channels, l.out_channels, l.params > l.in_channels * l.out_channels, rng);
  } else if (l.kind == "batch_norm") {
    m = std::make_shared<BatchNorm>(l.input[0]);
  } else if (l.kind == "max_pool" || l.kind == "avg_pool") {
    m = std::make_shared<Pool2d>(l.kind == "max_pool" ? PoolKind::kMax : PoolKind::kAvg, l.kernel, l.stride, l.padding);
  } else if (l.kind == "global_avg_pool") {
    m = global_avg_pool();
  } else if (l.kind == "relu") {
    m = std::make_shared<ReLU>();
  } else if (l.kind == "add") {
    // x + x: the forward's sum, and in backward the sum of two gradients into x. A residual
    // block's addition passes its gradient through unchanged (ops::add); the sum happens where
    // the shortcut forks off the block's input, which the model charges to the addition's
    // backward. Two distinct operands time the forward alone: 23-30% less on ResNet-20's shapes.
    return {[](const Variable& x) { return ops::add(x, x); }, nullptr};
  } else {
    return {};  // flatten, dropout and other kinds the zoo's small models do not run
  }
  return {[m](const Variable& x) { return (*m)(x); }, m};
}

namespace {

double stream_read(std::size_t bytes, double min_seconds) {
  const std::size_t words = bytes / sizeof(std::uint64_t);
  std::vector<std::uint64_t> a(words, 1);
  volatile std::uint64_t sink = 0;
  const double t = time_calls(
      [&] {
        std::uint64_t x = 0;
        for (std::size_t i = 0; i < words; ++i) x ^= a[i];
        sink = sink ^ x;
      },
      min_seconds);
  return static_cast<double>(bytes) / t;
}

double stream_write(std::size_t bytes, double min_seconds) {
  std::vector<std::uint8_t> a(bytes, 1);
  int value = 0;
  const double t = time_calls([&] { std::memset(a.data(), ++value & 0xff, a.size()); }, min_seconds);
  return static_cast<double>(bytes) / t;
}

double disk_read_rate(const std::string& dir_option) {
  std::string dir = dir_option;
  if (dir.empty()) dir = std::getenv("TMPDIR") != nullptr ? std::getenv("TMPDIR") : "/tmp";
  const std::string path = fmt::format("{}/dtrain-calibrate-{}.bin", dir, ::getpid());
  std::vector<char> block(std::size_t{1} << 20, 'x');
  const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_TRUNC, 0600);
  if (fd < 0) {
    throw InputError(
        fmt::format("cannot create the disk benchmark file '{}' ({}); give a writable folder with "
                    "--scratch-dir",
                    path, std::strerror(errno)));
  }
  bool ok = true;
  for (std::size_t done = 0; done < kDiskBytes && ok; done += block.size()) {
    ok = ::write(fd, block.data(), block.size()) == static_cast<ssize_t>(block.size());
  }
  ok = ok && ::fsync(fd) == 0 && ::posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED) == 0;
  Stopwatch sw;
  std::size_t read_bytes = 0;
  if (ok && ::lseek(fd, 0, SEEK_SET) == 0) {
    for (ssize_t n; (n = ::read(fd, block.data(), block.size())) > 0;) read_bytes += static_cast<std::size_t>(n);
  }
  const double seconds = sw.seconds();
  ::close(fd);
  ::unlink(path.c_str());
  if (!ok || read_bytes != kDiskBytes) {
    throw DataError(
        fmt::format("the disk benchmark could not write and read back '{}' (disk full?); give "
                    "another folder with --scratch-dir",
                    path));
  }
  return static_cast<double>(read_bytes) / seconds;
}

// Compute steps, each one forward and backward of every layer shape of the chosen models (not the
// shapes borrowed from the defaults for kinds they lack), timed one by one after one warm-up step.
// A step as long as the models' own keeps the variation at the time scale of the runs predicted:
// time-slicing and interrupts average out over long steps and not over short ones.
struct StepTimes {
  std::vector<double> steps, copies, casts_f16, casts_bf16;
};

// One compute step: a forward and backward of every layer shape of the chosen models.
void compute_step(LayerBench& bench) {
  for (std::size_t i = 0; i < bench.layers().size(); ++i) {
    if (bench.of_chosen_model(i)) bench.run(i);
  }
}

// The compute steps, each followed by a gradient copy of `gradient_bytes` (calibrate_compute.h):
// at least kMinSteps, and for kStepSeconds x min_seconds (0: kMinSteps exactly).
StepTimes time_steps(LayerBench& bench, std::size_t gradient_bytes, double min_seconds) {
  const std::size_t count = gradient_bytes / sizeof(float);
  std::vector<float> gradient(count, 1.0f), bucket(count, 0.0f);
  std::vector<std::uint16_t> wire(count);
  float value = 1.0f;
  bool finite = true;
  compute_step(bench);
  StepTimes t;
  const Stopwatch total;
  while (t.steps.size() < kMinSteps || (total.seconds() < kStepSeconds * min_seconds && t.steps.size() < kMaxSteps)) {
    const Stopwatch sw;
    compute_step(bench);
    t.steps.push_back(sw.seconds());
    value = value == 1.0f ? 2.0f : 1.0f;
    std::fill(gradient.begin(), gradient.end(), value);
    const Stopwatch copy;
    scaled_copy(gradient.data(), bucket.data(), count, 0.5f);  // as GradientBuckets::add
    t.copies.push_back(copy.seconds());
    // A 16-bit wire's two passes, as GradientBuckets makes them: the scaled cast in, the
    // widening with the finite check out.
    const Stopwatch f16;
    comm::scaled_to_16bit(DType::kF16, gradient.data(), wire.data(), count, 0.5f);
    finite = comm::widen_all_finite(DType::kF16, wire.data(), bucket.data(), count) && finite;
    t.casts_f16.push_back(f16.seconds());
    const Stopwatch bf16;
    comm::scaled_to_16bit(DType::kBF16, gradient.data(), wire.data(), count, 0.5f);
    finite = comm::widen_all_finite(DType::kBF16, wire.data(), bucket.data(), count) && finite;
    t.casts_bf16.push_back(bf16.seconds());
  }
  volatile float sink = finite ? bucket[count / 2] : 0.0f;
  (void)sink;
  return t;
}

// Mean seconds of the optimizer step on the model's parameters, each step timed where training
// runs it: after a forward and backward of the model at the calibration's batch (untimed). Those
// passes leave the caches as a step leaves them for its update. Timed back to back instead, the
// update found its weights and momenta in the caches: on 2 ranks of the 2-core VM mlp's came out
// at 6.1 G parameters/s and ResNet-20's at 2.4, where their data-parallel steps updated at 2.7-2.9
// and 0.95 (this way: 3.8 and 1.1; one process: 5.1, 2.8 and 1.15 G/s for mlp, LeNet and
// ResNet-20 against 5.0, 2.7 and 1.15 in training). The step applies fixed small gradients, read
// once after the backward as a step's freshly written ones are cached: the backward's own, on one
// batch step after step, shrink towards denormal values that slow the arithmetic (LeNet's update
// came out 3x slower).
double update_seconds(Module& model, const ModelInput& in, std::int64_t batch, double min_seconds) {
  const Tensor x = Tensor::full(Shape({batch, in.channels, in.height, in.width}), 0.5f);
  const Tensor labels = Tensor::zeros(Shape({batch}), DType::kI32);
  std::vector<Variable> params = model.parameters();
  std::vector<Tensor> gradients;
  gradients.reserve(params.size());
  for (const Variable& p : params) gradients.push_back(Tensor::full(p.shape(), 1e-6));
  auto optimizer = make_optimizer(OptimizerConfig{}, params);
  volatile std::uint8_t sink = 0;  // keeps the reads
  return time_calls([&] { optimizer->step(); }, min_seconds,
                    [&] {
                      optimizer->zero_grad();
                      ops::softmax_cross_entropy(model(Variable(x)), labels).backward();
                      for (std::size_t k = 0; k < params.size(); ++k) {
                        params[k].set_grad(gradients[k]);
                        const auto* bytes = reinterpret_cast<const std::uint8_t*>(gradients[k].data<float>());
                        sink = static_cast<std::uint8_t>(sink ^ read_lines(bytes, gradients[k].nbytes()));
                      }
                    });
}

using KindTimings = std::array<std::vector<ShapeTiming>, kComputeKinds.size()>;

// The chosen models' layers timed inside their own training steps (calibrate_in_model.h), by
// kind, in the calling thread's precision; none where the calibration times tensor-parallel parts
// (the models would have to be split as a run splits them).
KindTimings layers_in_steps(const ComputeCalibrationOptions& o, const DeviceProfile& memory) {
  KindTimings kinds;
  if (o.tensor_parallel > 1) return kinds;
  for (const std::string& model : o.models) {
    sync(o);
    for (ShapeTiming& t : time_layers_in_steps(model, o.batch, memory, o.rounds, kMinModelSteps,
                                               kModelSeconds * o.min_seconds / o.rounds))
      kinds[compute_kind_index(t.kind)].push_back(std::move(t));
  }
  return kinds;
}

// Each kind's rate from its layers inside the chosen models' steps where they have that kind, else
// from the layers timed alone (the default models' layers of a kind the chosen ones lack); `counts`:
// the layers or shapes each rate was fitted on, and whether they were timed inside the steps.
void fit_rates(const KindTimings& alone, const KindTimings& in_steps, std::array<double, kComputeKinds.size()>& rates,
               std::array<int, kComputeKinds.size()>& counts, std::array<bool, kComputeKinds.size()>& timed_in_steps) {
  for (std::size_t k = 0; k < kComputeKinds.size(); ++k) {
    timed_in_steps[k] = !in_steps[k].empty();
    const std::vector<ShapeTiming>& fit = timed_in_steps[k] ? in_steps[k] : alone[k];
    rates[k] = solve_roofline_rate(fit);
    counts[k] = static_cast<int>(fit.size());
  }
}

}  // namespace

double solve_roofline_rate(const std::vector<ShapeTiming>& timings) {
  double flops = 0, seconds = 0, memory = 0;
  for (const ShapeTiming& t : timings) {
    DT_CHECK(t.layers > 0, "shape {} counted for {} layers", t.shape, t.layers);
    flops += t.layers * t.flops;
    seconds += t.layers * t.seconds;
    memory += t.layers * t.memory_seconds;
  }
  DT_CHECK(flops > 0 && seconds > 0, "no work measured");
  auto predicted = [&](double r) {
    double s = 0;
    for (const ShapeTiming& t : timings) s += t.layers * std::max(t.flops / r, t.memory_seconds);
    return s;
  };
  if (memory >= seconds) return flops / seconds;
  // predicted(r) falls from +inf towards `memory` as r grows; bracket and bisect in log space.
  double lo = flops / seconds / 2, hi = flops / seconds;
  while (predicted(hi) > seconds) hi *= 2;
  for (int i = 0; i < 100 && hi / lo > 1 + 1e-9; ++i) {
    const double mid = std::sqrt(lo * hi);
    (predicted(mid) > seconds ? lo : hi) = mid;
  }
  return hi;
}

struct LayerBench::Prepared {
  LayerCall layer;
  std::vector<Variable> params;
  Variable input, f32_input;
  Tensor seed;
};

LayerBench::LayerBench(const ComputeCalibrationOptions& o) : batch_(o.batch) {
  if (o.batch < 1) throw InputError(fmt::format("--batch must be >= 1, got {}", o.batch));
  if (o.models.empty()) throw InputError("--models needs at least one model");
  Rng rng(1);
  std::map<std::string, std::size_t> seen;  // shape -> its index in layers_
  std::array<bool, kComputeKinds.size()> covered{}, by_chosen{};
  // Kinds the chosen models lack are measured on the default models' layers of that kind.
  std::vector<std::string> names = o.models;
  const ComputeCalibrationOptions defaults;
  names.insert(names.end(), defaults.models.begin(), defaults.models.end());
  for (std::size_t i = 0; i < names.size(); ++i) {
    const bool chosen = i < o.models.size();
    if (i == o.models.size()) by_chosen = covered;
    const ModelInput in = natural_input(names[i]);
    auto model = make_model(names[i], in, rng);
    std::vector<LayerSummary> traced = trace_layers(*model, Shape{in.channels, in.height, in.width});
    if (o.tensor_parallel > 1) {
      std::vector<LayerSummary> parts;
      std::vector<std::string> children;  // the chain's own names, as parallelize() splits them
      if (const auto* chain = dynamic_cast<const Sequential*>(model.get()))
        for (std::size_t c = 0; c < chain->size(); ++c) children.push_back(chain->layer_name(c));
      for (auto& split : split_parts(traced, o.tensor_parallel, children)) parts.push_back(std::move(split.second));
      traced = std::move(parts);
    }
    const std::size_t footprint = std::min(activation_bytes(traced, o.batch), 2 * last_level_cache_bytes());
    for (const LayerSummary& l : traced) {
      const std::size_t kind = compute_kind_index(l.kind);
      if (!chosen && by_chosen[kind]) continue;
      if (l.forward_flops <= 0) continue;
      const std::string key = fmt::format("{} {} {}", describe(l), l.params, first_weighted_layer(l));
      // A shape met again counts one layer more (a default model only reaches here for kinds the
      // chosen models lack, so its shapes never meet a chosen model's).
      if (const auto again = seen.find(key); again != seen.end()) {
        ++counts_[again->second];
        continue;
      }
      LayerCall call = make_layer(l, rng);
      if (!call) continue;
      seen.emplace(key, layers_.size());
      covered[kind] = true;
      layers_.push_back(l);
      chosen_.push_back(chosen);
      counts_.push_back(1);
      prepared_.push_back(prepare(l, std::move(call), rng));
      evict_.push_back(footprint);
      const double biggest = static_cast<double>(std::max(l.input.numel(), l.output.numel()));
      largest_bytes_ = std::max(largest_bytes_, static_cast<std::size_t>(4.0 * static_cast<double>(o.batch) * biggest));
    }
    if (chosen) models_.push_back(std::move(model));
  }
  scratch_.assign(evict_.empty() ? 0 : *std::max_element(evict_.begin(), evict_.end()), 0);
}

LayerBench::~LayerBench() = default;

std::size_t largest_gradient_bytes(const std::vector<std::string>& models) {
  Rng rng(1);
  std::int64_t largest = 0;
  for (const std::string& name : models)
    largest = std::max(largest, make_model(name, natural_input(name), rng)->num_parameters());
  return static_cast<std::size_t>(largest) * sizeof(float);
}

// The input in the layout the model feeds (channel-blocked from the first layer whose channels fill
// the blocks on: docs/design.md), and the gradient seed in the output's layout.
std::unique_ptr<LayerBench::Prepared> LayerBench::prepare(const LayerSummary& l, LayerCall call, Rng& rng) const {
  auto p = std::make_unique<Prepared>();
  p->layer = std::move(call);
  if (p->layer.module) p->params = p->layer.module->parameters();
  std::vector<std::int64_t> dims{batch_};
  dims.insert(dims.end(), l.input.dims().begin(), l.input.dims().end());
  std::vector<float> values(static_cast<std::size_t>(Shape(dims).numel()));
  for (float& v : values) v = static_cast<float>(rng.uniform(-1, 1));
  Tensor x = Tensor::from_vector(values, Shape(dims));
  if (dims.size() == 4) x = x.to_layout(cpu_activation_layout(dims[1]));
  p->input = Variable(x, !first_weighted_layer(l));
  p->f32_input = p->input;
  return p;
}

void LayerBench::use_bf16_input(std::size_t i, bool bf16) {
  Prepared& p = *prepared_.at(i);
  const bool first = first_weighted_layer(layers_.at(i));
  p.input = bf16 && !first ? Variable(p.f32_input.data().to(DType::kBF16), true) : p.f32_input;
}

void LayerBench::run(std::size_t i) {
  Prepared& p = *prepared_.at(i);
  // As the optimizer's zero_grad before each step: backward assigns, never accumulates.
  p.input.zero_grad();
  for (Variable& q : p.params) q.zero_grad();
  Variable y = p.layer.call(p.input);
  if (!p.seed.defined()) p.seed = Tensor::full(y.shape(), 1.0).to_layout(y.data().layout());
  y.backward(p.seed);
}

// Reads `bytes` of the scratch buffer, a cache line at a time (memset's large fills use
// non-temporal stores, which leave the caches as they were).
void LayerBench::evict_caches(std::size_t bytes) { evict_sink_ ^= read_lines(scratch_.data(), bytes); }

// Reads layer i's input back into the caches: in a step it was written by the layer before.
void LayerBench::touch_input(std::size_t i) {
  const Tensor& x = prepared_.at(i)->input.data();
  evict_sink_ ^= read_lines(static_cast<const std::uint8_t*>(x.raw_data()), x.nbytes());
}

double LayerBench::time(std::size_t i, double min_seconds) {
  return time_calls([&] { run(i); }, min_seconds,
                    [&] {
                      evict_caches(evict_.at(i));
                      touch_input(i);
                    });
}

std::string LayerBench::describe_layer(std::size_t i) const { return describe(layers_.at(i)); }

std::vector<double> time_free_steps(LayerBench& bench, std::size_t gradient_bytes) {
  return time_steps(bench, gradient_bytes, 0.0).steps;
}

std::vector<double> time_lockstep_steps(LayerBench& bench, const ComputeCalibrationOptions& o, std::size_t steps) {
  sync(o);
  compute_step(bench);  // warm-up
  std::vector<double> seconds;
  seconds.reserve(steps);
  for (std::size_t k = 0; k < steps; ++k) {
    sync(o);
    const Stopwatch sw;
    compute_step(bench);
    seconds.push_back(sw.seconds());
  }
  return seconds;
}

DeviceCalibration calibrate_device(LayerBench& bench, const ComputeCalibrationOptions& o) {
  // Memory is measured on a buffer as large as the largest tensor a layer streams: the level of
  // the memory hierarchy activations live in (caches for small images, DRAM for large ones).
  const std::size_t stream = std::max(std::bit_ceil(bench.largest_tensor_bytes()), kMinStreamBytes);
  DeviceCalibration d;
  d.stream_bytes = stream;
  sync(o);
  d.memory_read = stream_read(stream, o.min_seconds);
  sync(o);
  d.memory_write = stream_write(stream, o.min_seconds);

  DeviceProfile memory_only;
  memory_only.memory_read.value = d.memory_read;
  memory_only.memory_write.value = d.memory_write;
  for (Quantity& c : memory_only.compute) c.value = 1e30;  // the arithmetic term vanishes
  KindTimings per_kind;
  const std::size_t n = bench.layers().size();
  // Every shape in o.rounds passes, each a share of min_seconds, and the median pass per shape:
  // a slow moment of the machine (another tenant for a few tenths of a second) then costs one
  // pass of the shapes it met rather than their rate. One process on the VM of 2026-12-01,
  // ResNet-20, 8 calibrations each way: the predicted step 87.6-95.9 ms in one pass (one shape
  // at 5.9 ms where it takes 3.6-3.9), 87.1-92.6 in three, for runs of 80.7-86.2 ms.
  DT_CHECK(o.rounds >= 1, "calibration rounds must be >= 1, got {}", o.rounds);
  std::vector<std::vector<double>> round_seconds(n);
  for (int r = 0; r < o.rounds; ++r) {
    for (std::size_t i = 0; i < n; ++i) {
      sync(o);
      round_seconds[i].push_back(bench.time(i, o.min_seconds / o.rounds));
    }
  }
  for (std::size_t i = 0; i < n; ++i) {
    const LayerSummary& l = bench.layers()[i];
    ShapeTiming t;
    t.kind = l.kind;
    t.shape = bench.describe_layer(i);
    t.flops = static_cast<double>(o.batch) * (l.forward_flops + l.backward_flops);
    const LayerTime mem = layer_time(l, o.batch, memory_only);
    t.memory_seconds = mem.forward.seconds + mem.backward.seconds;
    t.seconds = median(round_seconds[i]);
    t.layers = bench.layers_of_shape(i);
    per_kind[compute_kind_index(l.kind)].push_back(t);
    d.timings.push_back(t);
  }
  for (std::size_t k = 0; k < kComputeKinds.size(); ++k)
    DT_CHECK(!per_kind[k].empty(), "no {} layer to calibrate", kComputeKinds[k]);
  fit_rates(per_kind, layers_in_steps(o, memory_only), d.compute, d.shapes, d.in_steps);
  if (o.bf16) {
    // Every layer again in bf16: the matrix layers on the CPU's bf16 dot products, the
    // memory-bound kinds (batch norm, pooling, ReLU, additions) on bf16 data. Inside the chosen
    // models' steps, and alone (rounds and medians as above) only the shapes of kinds they lack.
    std::optional<ComputePrecisionScope> in_bf16(std::in_place, ComputePrecision::kBF16);
    DeviceProfile memory_bf16 = memory_only;  // the memory floor with the bf16 run's bytes
    memory_bf16.activation_element_bytes = Bf16RunBytes::activation;
    memory_bf16.gradient_element_bytes = Bf16RunBytes::gradient;
    const KindTimings bf16_in_steps = layers_in_steps(o, memory_bf16);
    KindTimings bf16_kind;
    for (std::size_t i = 0; i < n; ++i) {
      if (!bf16_in_steps[compute_kind_index(bench.layers()[i].kind)].empty()) continue;
      bench.use_bf16_input(i, true);
      std::vector<double> rounds;
      for (int r = 0; r < o.rounds; ++r) {
        sync(o);
        rounds.push_back(bench.time(i, o.min_seconds / o.rounds));
      }
      bench.use_bf16_input(i, false);
      ShapeTiming t = d.timings[i];
      t.seconds = median(rounds);
      const LayerTime mem = layer_time(bench.layers()[i], o.batch, memory_bf16);
      t.memory_seconds = mem.forward.seconds + mem.backward.seconds;
      bf16_kind[compute_kind_index(t.kind)].push_back(t);
    }
    std::array<int, kComputeKinds.size()> layers{};
    std::array<bool, kComputeKinds.size()> in_steps{};
    fit_rates(bf16_kind, bf16_in_steps, d.bf16, layers, in_steps);
    in_bf16.reset();
  }
  sync(o);
  std::int64_t largest = 0;
  for (const auto& m : bench.models()) largest = std::max(largest, m->num_parameters());
  d.gradient_bytes = std::clamp<std::size_t>(static_cast<std::size_t>(largest) * sizeof(float), 64 << 10, 256 << 20);
  const StepTimes steps = time_steps(bench, d.gradient_bytes, o.min_seconds);
  d.step_seconds = steps.steps;
  d.gradient_copy = static_cast<double>(d.gradient_bytes) / median(steps.copies);
  const double elements = static_cast<double>(d.gradient_bytes) / sizeof(float);
  d.cast_f16 = elements / median(steps.casts_f16);
  d.cast_bf16 = elements / median(steps.casts_bf16);
  d.step_variation = robust_variation(d.step_seconds);
  double params = 0, update = 0;
  for (std::size_t j = 0; j < bench.models().size(); ++j) {
    const auto& m = bench.models()[j];
    sync(o);
    params += static_cast<double>(m->num_parameters());
    update += update_seconds(*m, natural_input(o.models.at(j)), o.batch, o.min_seconds);
  }
  d.update = params / update;
  sync(o);
  d.disk_read = disk_read_rate(o.scratch_dir);
  return d;
}

}  // namespace dtrain::perf
