// The autograd functions that join tensor-parallel layers to the rest of a model (Megatron-LM's
// mappings, Shoeybi et al. 2019, section 3): each is one collective in one direction and the
// identity or a local slice in the other, so a layer's cost is stated by which of them it uses.
//
//   copy_to_parallel     forward: identity            backward: allreduce of dL/dx (N x features)
//   reduce_from_parallel forward: allreduce of y      backward: identity
//   gather_features      forward: allgather along dim 1 (every rank's N x F/T block into N x F)
//                        backward: this rank's block of dL/dy (no communication)
// Every collective runs on the communicator given, in ring order, f32.
#pragma once

#include "autograd/variable.h"
#include "comm/communicator.h"

namespace dtrain::tensorparallel {

Variable copy_to_parallel(const Variable& x, comm::Communicator& comm);
Variable reduce_from_parallel(const Variable& x, comm::Communicator& comm);
// x: [N, F/T, ...] on each of T ranks -> [N, F, ...], rank r's block at features [r F/T, (r+1) F/T).
Variable gather_features(const Variable& x, comm::Communicator& comm);

// Rows [begin, end) of dim 0 of a plain tensor, and the block `part` of `parts` along dim 1 (the
// slices each rank keeps of a whole layer's weights and of a gathered gradient).
Tensor slice_dim0(const Tensor& t, std::int64_t begin, std::int64_t end);
Tensor slice_dim1(const Tensor& t, int part, int parts);

}  // namespace dtrain::tensorparallel
