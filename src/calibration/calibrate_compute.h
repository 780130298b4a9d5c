// The device half of `dtrain calibrate`: micro-benchmarks of dtrain's own kernels that measure
// the device part of a profile (profile.h) on the machine they run on.
//
//   memory_read, memory_write  streaming a buffer as large as the largest activation tensor of
//                              the representative layers at the batch (a 64-bit XOR reduction;
//                              a fill): the level of the memory hierarchy layers stream from;
//   compute rate per kind      the layers of the chosen models (by default the zoo's
//                              small-image models mlp, lenet and resnet20), their functional
//                              ops included (layer_trace.h), each timed inside the model's own
//                              training steps at the batch (calibrate_in_model.h: the mean of
//                              its forward and backward spans over the steps); a kind the chosen
//                              models lack is measured on the default models' layer shapes,
//                              each built alone as its module, fed an input in the layout the
//                              model would feed it and run forward and backward, each timed call
//                              after reading as many other bytes as its model's forward writes
//                              (its activations, at most twice the last-level cache) and then
//                              its input, in `rounds` passes over all of them, each keeping its
//                              median pass (so a slow moment costs a pass, not a rate). Timed
//                              alone so, ResNet-20's batch norms, ReLUs and additions took
//                              1.3-2.7x their times inside its steps and priced them 14-26%
//                              high (2026-12-05). The rate of a kind is the one that makes the
//                              roofline of layer_cost.h reproduce the measured total of the
//                              models' layers of that kind (a shape timed alone counted as often
//                              as the models have it), i.e. solves
//                                sum_i n_i max(F_i / r, M_i) = sum_i n_i T_i  for r
//                              (n layers of the shape, F FLOPs, M the memory term at the measured
//                              rates, T the mean time). It is sum nF / sum nT when arithmetic
//                              binds every layer. Every distinct shape counted once, ResNet-20's
//                              five shapes of one layer (the stem, stride-2 and 1x1 shortcut
//                              convolutions, 42-173 GFLOP/s) weighed as much as its three of 5-6
//                              layers (148-221 GFLOP/s), and the rate priced its convolutions
//                              18% over their own times' sum. The shapes timed alone also give
//                              the overlap calibration its compute (calibrate_overlap.h) and
//                              --per-shape its table;
//   step variation             compute steps (one forward and backward of every layer shape
//                              of the chosen models, in order: about as long as their own
//                              steps) timed one by one: the robust coefficient of
//                              variation of their times (straggler.h: robust_variation), which
//                              calibration.h combines over ranks, and where ranks time-share
//                              CPUs the slowest of the ranks' steps a synchronous step waits
//                              for (straggler.h: expected_slowest; profile.h: turn_taking);
//   gradient copy              after each of those steps, the largest chosen model's gradient
//                              bytes written (as backward writes a gradient) and then copied,
//                              timed, into a second buffer (its bucket, last touched a step
//                              ago): the median copy's bytes per second;
//   casts                      after each copy, the bucket cast to f16 and back, then to bf16
//                              and back, each round trip timed (the communication thread's
//                              conversions around a 16-bit allreduce: parallel/buckets.h): the
//                              median's f32 elements per second, per format;
//   update                     the optimizer step (momentum SGD, as `dtrain train` defaults to)
//                              on each representative model's parameters, each one timed after
//                              an untimed forward and backward of that model, as in a step:
//                              parameters / second;
//   disk_read                  a file of 64 MiB written, synced, dropped from the page cache
//                              (posix_fadvise) and read back in 1 MiB blocks.
// Every rank of a calibration runs the same benchmark at the same time (the caller passes a
// barrier between them), so ranks sharing a host share its cores and memory exactly as the
// training runs they predict do: oversubscription is measured, not modelled.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "core/random.h"
#include "nn/models/models.h"
#include "nn/summary.h"
#include "perfmodel/profile.h"

namespace dtrain::perf {

struct ComputeCalibrationOptions {
  std::vector<std::string> models = {"mlp", "lenet", "resnet20"};
  std::int64_t batch = 64;  // samples per benchmark call (the per-rank batch of the runs predicted)
  // T > 1: time what one of T tensor-parallel ranks computes of each layer (the split layers'
  // parts, perfmodel/tensor_parallel_cost.h: split_parts), the shapes a --tensor-parallel T run has.
  int tensor_parallel = 1;
  // Also time every layer in bf16 (tensor/kernels/cpu/compute_precision.h), on bf16 inputs past
  // the first weighted layer as a bf16 run feeds them, for the profile's device.precisions.bf16.
  // InputError where the CPU has no bf16 instructions.
  bool bf16 = false;
  double min_seconds = 0.1;       // per shape: repeat until this much time was measured (and 5 calls)
  int rounds = 3;                 // passes over every shape, min_seconds / rounds each; the median pass counts
  std::string scratch_dir;        // for the disk benchmark; "" = $TMPDIR or /tmp
  std::function<void()> barrier;  // aligns the ranks between benchmarks (may be empty)
};

struct ShapeTiming {
  std::string kind;           // the layer kind (conv2d, relu, add, ...)
  std::string shape;          // "conv2d 16->32 3x3/2 32x32" etc.
  double flops = 0;           // forward + backward of one call
  double seconds = 0;         // mean of the calls
  double memory_seconds = 0;  // the roofline's memory term for it
  double layers = 1;          // how many layers of the models have this shape (its weight in the rate)
};

struct DeviceCalibration {
  std::size_t stream_bytes = 0;                        // the memory benchmarks' buffer
  double memory_read = 0, memory_write = 0;            // bytes/s
  std::array<double, kComputeKinds.size()> compute{};  // FLOP/s per kind
  std::array<int, kComputeKinds.size()> shapes{};      // layers (in_steps) or shapes (alone) per kind
  // Per kind: its rate was fitted on the chosen models' layers timed inside their steps
  // (calibrate_in_model.h), else on the shapes timed alone.
  std::array<bool, kComputeKinds.size()> in_steps{};
  double update = 0;                                   // parameters/s
  double disk_read = 0;                                // bytes/s of this process
  std::vector<ShapeTiming> timings;
  std::vector<double> step_seconds;    // the timed compute steps, in order
  double step_variation = 0;           // robust std / median of step_seconds
  std::size_t gradient_bytes = 0;      // the gradient copy's size
  double gradient_copy = 0;            // bytes/s
  double cast_f16 = 0, cast_bf16 = 0;  // f32 elements/s cast to the format and back
  // With ComputeCalibrationOptions::bf16: each kind's rate in bf16 (FLOP/s), indexed like
  // kComputeKinds; else 0.
  std::array<double, kComputeKinds.size()> bf16{};
};

// Bytes of an activation element and of its gradient's in dtrain's bf16 runs (the profile's
// device.precisions.bf16.activation_bytes and gradient_bytes): convolutions, batch norms, ReLUs
// and additions of bf16 activations write bf16; the gradients are f32 but inside a ResNet block
// (from its last batch norm to its first convolution), where they stay bf16, a share the model
// does not price apart.
struct Bf16RunBytes {
  static constexpr double activation = 2, gradient = 4;
};

// The module (or functional op) of a layer, built alone; empty for kinds the benchmark does not
// run (views such as flatten, dropout).
struct LayerCall {
  std::function<Variable(const Variable&)> call;
  std::shared_ptr<Module> module;  // null for a functional op
  explicit operator bool() const { return static_cast<bool>(call); }
};
LayerCall make_layer(const LayerSummary& layer, Rng& rng);

// The distinct layer shapes of the representative models, each built alone with its input and
// gradient seed ready, so a call runs exactly one forward and backward of one layer.
class LayerBench {
 public:
  explicit LayerBench(const ComputeCalibrationOptions& options);
  ~LayerBench();
  LayerBench(const LayerBench&) = delete;
  LayerBench& operator=(const LayerBench&) = delete;

  const std::vector<LayerSummary>& layers() const { return layers_; }
  // The chosen models (for the update benchmark).
  const std::vector<std::shared_ptr<Module>>& models() const { return models_; }
  std::size_t largest_tensor_bytes() const { return largest_bytes_; }
  // Whether layer i is a shape of the chosen models (not one borrowed from the defaults).
  bool of_chosen_model(std::size_t i) const { return chosen_.at(i); }
  // How many layers of the models it was taken from have shape i (the chosen models, or the
  // default models it was borrowed from).
  int layers_of_shape(std::size_t i) const { return counts_.at(i); }
  // One forward and backward of layer i.
  void run(std::size_t i);
  // Feeds layer i a bf16 copy of its input (a bf16 run's activations), or its f32 input again.
  void use_bf16_input(std::size_t i, bool bf16);
  // Mean seconds of run(i) over at least min_seconds of calls (at most 4x that of wall time),
  // after warm-up calls, each call after its model's activations were read (at most twice the
  // last-level cache) and then its input. Ranks time their calls side by side without a barrier
  // per call: with more ranks than CPUs, the ranks a barrier releases first would finish their
  // call alone (on the 2-core VM with 4 ranks ResNet-20 came out at 151 ms per step where its
  // ranks computed for 195-201 ms in training, 213 ms without the barrier).
  double time(std::size_t i, double min_seconds);
  std::string describe_layer(std::size_t i) const;

 private:
  struct Prepared;
  std::unique_ptr<Prepared> prepare(const LayerSummary& l, LayerCall call, Rng& rng) const;

  std::int64_t batch_;
  std::vector<LayerSummary> layers_;
  std::vector<bool> chosen_;
  std::vector<int> counts_;
  std::vector<std::unique_ptr<Prepared>> prepared_;
  std::vector<std::size_t> evict_;     // per layer: bytes read before each timed call
  std::vector<std::uint8_t> scratch_;  // the buffer they are read from
  std::uint8_t evict_sink_ = 0;        // keeps those reads
  void evict_caches(std::size_t bytes);
  void touch_input(std::size_t i);
  std::vector<std::shared_ptr<Module>> models_;
  std::size_t largest_bytes_ = 0;
};

// The gradient bytes (f32) of the largest of `models`, built at their natural input: the largest
// allreduce a data-parallel run of one of them sends (one bucket holding every gradient).
std::size_t largest_gradient_bytes(const std::vector<std::string>& models);

// The input the zoo feeds each model (as `dtrain bench train` does): CIFAR-sized images for the
// ResNets, 224x224 for ResNet-50, Fashion-MNIST-sized for the others.
ModelInput natural_input(const std::string& model);

// Memory rates, then every layer of the bench (timings[i] is layer i), the compute steps, the
// update and the disk.
DeviceCalibration calibrate_device(LayerBench& bench, const ComputeCalibrationOptions& options);

// Compute steps as DeviceCalibration::step_seconds times them, unsynchronised and each followed
// by the gradient copy and casts of `gradient_bytes`, as many as the fewest that times (12): a
// later block of the steps the turns of time-shared ranks are estimated from (calibration.h).
std::vector<double> time_free_steps(LayerBench& bench, std::size_t gradient_bytes);

// Compute steps as DeviceCalibration::step_seconds times them (a forward and backward of every
// layer shape of the chosen models), `steps` of them, each after the options' barrier: step k runs
// on every rank at once, so what slowed the whole machine during it slows every rank's step k
// alike (straggler.h: lockstep_variation). Collective where the barrier is set.
std::vector<double> time_lockstep_steps(LayerBench& bench, const ComputeCalibrationOptions& options, std::size_t steps);

// The rate that makes sum_i n_i max(flops_i / r, memory_i) equal sum_i n_i seconds_i, n the
// shapes' `layers` (bisection; falls back to sum n flops / sum n seconds when the memory terms
// alone already exceed the measured time).
double solve_roofline_rate(const std::vector<ShapeTiming>& timings);

}  // namespace dtrain::perf
