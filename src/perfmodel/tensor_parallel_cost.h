// Tensor parallelism priced layer by layer, by the rule that splits the layers at run time
// (tensorparallel/plan.h) and the collectives each split layer's header states. For a micro-batch
// of N samples over T ranks (f32):
//   column:          FLOPs, parameters and output features / T; backward allreduce of N x I (dL/dx)
//   column+gather:   as column, and forward an allgather of N x O/T per rank
//   row:             FLOPs, parameters and input features / T; forward allreduce of N x O
//   channel:         FLOPs, parameters and output channels / T; forward an allgather of N x O/T x OH x OW
//                    per rank, backward an allreduce of N x C x H x W (dL/dx)
//   whole:           every rank runs the whole layer, no communication
// An allreduce is allreduce_time (ring over T, as tensorparallel/regions.cpp runs it); a ring
// allgather takes T - 1 steps, each alpha + the rank's block / the intra-node link's bandwidth.
// Each collective also moves data locally, as regions.cpp does, each pass priced as a calibrated
// gradient copy per element (a buffer last touched a layer ago):
//   allreduce:   a copy of the buffer it runs on (row forward, column and channel backward);
//   allgather:   the part leaves the layer's layout (a convolution's blocked output: one reorder),
//                the own block into the gathered buffer, the whole output rebuilt feature-major,
//                and the next convolution's reorder of the plain input back (channel splits);
//                backward the rank's block of the gradient sliced out;
//   row bias:    the sum copied once more to add the whole bias, and its gradient's column sums
//                read in backward.
// Only the chain's own children are candidates, as at run time; the layers of a residual block
// stay whole.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "nn/summary.h"
#include "perfmodel/profile.h"
#include "tensorparallel/plan.h"

namespace dtrain::perf {

struct TensorParallelLayer {
  tensorparallel::TensorSplit split = tensorparallel::TensorSplit::kWhole;
  LayerSummary part;                               // what one rank computes: the layer with its split side divided by T
  double forward_comm_s = 0, backward_comm_s = 0;  // its collectives and their copies, per micro-batch
  double forward_comm_bytes = 0, backward_comm_bytes = 0;  // what each collective reduces or gathers
};

// What one of `parts` ranks computes of each of `layers` (forward order, one chain's or one
// pipeline stage's): the split and the layer with its split side divided, no communication.
// `dtrain calibrate --tensor-parallel T` times these shapes.
// `names`: the chain's child names (a child's layers lie under it); empty: each path's first
// component. The element-wise layers between a column layer and its row layer run on O / T
// features, as they do at run time.
std::vector<std::pair<tensorparallel::TensorSplit, LayerSummary>> split_parts(
    const std::vector<LayerSummary>& layers, int parts, const std::vector<std::string>& names = {});

// `layers` (forward order, one chain's or one pipeline stage's) as one of `parts` ranks runs them.
// Without `input_needs_gradient` (the model's first layers, fed the data) no dL/dx is computed
// before the first layer with parameters has run, and no allreduce of it either.
// InputError when T exceeds the profile's devices per node.
std::vector<TensorParallelLayer> split_layers(const std::vector<LayerSummary>& layers, int parts,
                                              std::int64_t micro_batch, const Profile& profile,
                                              bool input_needs_gradient, const std::vector<std::string>& names = {});

// Seconds of a ring allgather of `bytes_per_rank` over `parts` ranks on the intra-node link.
double allgather_seconds(int parts, double bytes_per_rank, const Profile& profile);

}  // namespace dtrain::perf
