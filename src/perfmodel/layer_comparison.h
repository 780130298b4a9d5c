// `dtrain explain LOG --trace FILE`: a measured run's forward and backward, layer by layer (the
// Chrome trace of `dtrain train --trace`, train/trace_recorder.h), beside the model's price of
// the same layers (step_model.h's timeline, the events `dtrain predict --trace` writes), summed
// per layer kind: which kind the calibrated rates mis-price on this machine, where the step's
// totals only say that compute is off.
//
// Layers are matched by name (the layer path the trace and the model share) and phase. A measured
// layer's time is the mean of its spans over every rank and recorded step; its kind is the one its
// forward span names (backward spans name none). Spans the model has no layer for (the loss) and
// model layers the trace lacks are counted apart, not matched.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "perfmodel/step_model.h"

namespace dtrain::perf {

struct LayerTimes {
  std::string name, kind, phase;       // phase: forward or backward
  double measured = 0, predicted = 0;  // seconds per step
};

struct LayerComparison {
  int rank_steps = 0;                // spans of the most recorded layer: ranks x recorded steps
  std::vector<LayerTimes> kinds;     // per kind and phase, largest measured first
  std::vector<LayerTimes> layers;    // every matched layer, in the model's order
  double unmatched_measured = 0;     // per step: spans of layers the model lacks (the loss)
  std::vector<std::string> missing;  // model layers the trace never recorded
  double measured_total() const;
  double predicted_total() const;
};

// Throws DataError naming the file when `trace` holds no forward or backward spans (not a trace of
// dtrain train --trace), InputError when the prediction has no layers.
LayerComparison compare_layers(const nlohmann::json& trace, const StepPrediction& prediction,
                               const std::string& trace_name);

// The table for the terminal: per kind and phase, measured, model and the model's error, then the
// layers whose error is largest.
std::string format_layer_comparison(const LayerComparison& c, const std::string& trace_name);

// Reads a trace file; InputError when it cannot be opened, DataError when it is not JSON.
nlohmann::json read_trace(const std::string& path);

}  // namespace dtrain::perf
