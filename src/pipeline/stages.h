// Splitting a Sequential model into pipeline stages: contiguous ranges of its layers, each a
// Sequential of the same layer objects under the same names, so a stage's parameters keep the
// whole model's names ("f2.weight") and a checkpoint or export lines up with the unsplit model.
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "nn/sequential.h"

namespace dtrain::pipeline {

// Stage k holds layers [bounds[k], bounds[k + 1]); bounds has K + 1 entries, 0 first, the layer
// count last.
using StageBounds = std::vector<std::size_t>;

// Stages that start at the named layers (K - 1 names, in model order: "--split f2"). InputError
// naming the valid layer names for a name the model lacks, and for names out of order or twice.
StageBounds split_at(const Sequential& model, const std::vector<std::string>& stage_starts);

// K stages of contiguous layers minimising the slowest stage's cost (torchgpipe's balance_by_time,
// PipeDream's partitioner objective), by dynamic programming over the split points:
// best[k][j] = min over i of max(best[k-1][i], cost(i, j)). InputError when K exceeds the layers.
StageBounds split_balanced(const std::vector<double>& layer_costs, int stages);

// Each layer's forward and backward FLOPs per sample (nn/summary.h, Paleo's counting): the cost
// split_balanced balances when no measured per-layer times are at hand.
std::vector<double> layer_flops(Sequential& model, const Shape& sample_shape);

// The layers [begin, end) of `model` as one stage.
std::shared_ptr<Sequential> make_stage(const Sequential& model, std::size_t begin, std::size_t end);

// Per-sample shapes at the stage boundaries: entry k is stage k's input without its batch
// dimension (entry 0 the model's input, entry K its output), found by one forward pass of one
// zero sample in evaluation mode without gradients (pipeline transfers have static shapes).
std::vector<Shape> boundary_shapes(Sequential& model, const StageBounds& bounds, const Shape& sample_shape);

// "f1..relu1 | f2..f3" for logs.
std::string describe(const Sequential& model, const StageBounds& bounds);

}  // namespace dtrain::pipeline
