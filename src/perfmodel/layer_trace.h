// Every op one training step's forward runs, as layers the model can cost: the leaf modules of
// nn/summary.h, and the ops a composite module computes itself outside any leaf (ResNet's basic
// block adds its shortcut and applies a ReLU in its own forward, nn/residual.cpp). Without those
// a ResNet-20 step would miss 18 ReLUs and 9 additions over full-size activations: memory-bound
// passes the roofline must charge.
//
// A functional op becomes a LayerSummary with kind = the op's name ("relu", "add"), path = the
// composite's path + "." + name + "#k" (k counts that op within the composite call), shapes from
// the op's first input and its output, and the elementwise counts of summarize: one FLOP per
// output element each way, bytes = input + output. Views (reshape) move no data and are left out.
#pragma once

#include <vector>

#include "nn/summary.h"

namespace dtrain::perf {

// summarize(model, sample_shape) with the functional ops inserted where forward runs them.
std::vector<LayerSummary> trace_layers(Module& model, const Shape& sample_shape);

}  // namespace dtrain::perf
