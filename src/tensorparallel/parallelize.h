// A chain's tensor-parallel copy on one of the T ranks of a communicator: the layers
// plan_tensor_split (plan.h) splits become this rank's ColumnParallelLinear, RowParallelLinear or
// ChannelParallelConv2d part, under the same names (so "f1.weight" names this rank's block of the
// whole f1.weight); every other layer is the whole chain's own object, shared. Every rank must
// build it from the same whole model (the same seed), and feed every call the same input.
#pragma once

#include <memory>
#include <vector>

#include "comm/communicator.h"
#include "nn/sequential.h"
#include "tensorparallel/plan.h"

namespace dtrain::tensorparallel {

// The chain's layers as plan_tensor_split sees them.
std::vector<SplitCandidate> split_candidates(const Sequential& chain);

std::shared_ptr<Sequential> parallelize(const Sequential& whole, comm::Communicator& comm);

// The block of a whole parameter (or its gradient) that rank `rank` of `parts` holds as a tensor
// of shape `part`: all of it (a whole layer, a row-parallel bias), a block of rows (column and
// channel splits) or of columns (row splits).
Tensor part_of(const Tensor& whole, const Shape& part, int rank, int parts);

}  // namespace dtrain::tensorparallel
