// Layer times taken inside a model's own training steps, for the compute rates of `dtrain
// calibrate` (calibrate_compute.h).
//
// Each of a model's layers is timed where a training step runs it, by the recorder of `dtrain
// train --trace` (train/trace_recorder.h): a leaf module's forward span, a composite's own op
// (a residual block's addition and ReLU) from the end of what ran before it, and the backward
// spans of the autograd nodes each layer made. Its caches then hold what a step leaves them: the
// input just written by the layer before, the output buffer and the tensors backward reads last
// touched a step's activations ago, oneDNN's primitives warm. Timed alone, with the caches
// evicted and the input read back before each call, ResNet-20's batch norms, ReLUs and additions
// took 1.3-2.7x their times inside its steps (bf16 and f32, one thread, 2026-12-05), which priced
// its step 14-26% over the run.
//
// A layer's time is the median over `rounds` rounds of its forward plus backward spans' mean per
// step in that round, as calibrate_compute.cpp times a shape alone: the mean within a round, since
// where ranks time-share cores a layer's share of them shows in the mean of many steps and not in
// their median; the median of the rounds, so a slow moment of a shared machine costs a round and
// not the rate (one round of 65 ms of mlp's steps put its linear layers at 102-166 GFLOP/s in
// three calibrations). The first steps (primitive creation, first touch of every buffer) are left
// out. The loss's spans name no layer and are dropped. Where two branches' gradients meet (a
// residual block's input), the sum is charged to the span that computes the second: the model
// prices it as the addition's backward, so the rates fit per kind absorb it in the neighbouring
// kinds (the step's sum stays).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "calibration/calibrate_compute.h"
#include "perfmodel/profile.h"

namespace dtrain::perf {

// Every layer with work of model `name` at its natural input (natural_input), trained on
// random samples at `batch` in the calling thread's compute precision: forward and backward
// seconds per layer as ShapeTiming (layers = 1, shape = its path and shape), the memory term from
// `memory` (a profile of the memory rates alone, its element bytes those of the precision). Two
// untimed steps, then `rounds` rounds, each of at least `min_steps` steps and `seconds_per_round`.
std::vector<ShapeTiming> time_layers_in_steps(const std::string& name, std::int64_t batch, const DeviceProfile& memory,
                                              int rounds, int min_steps, double seconds_per_round);

}  // namespace dtrain::perf
