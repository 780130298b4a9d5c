// A linear layer split by its output features over the T ranks of a communicator (Megatron-LM's
// ColumnParallelLinear): rank r holds rows [r O/T, (r+1) O/T) of W [O, I] and of b, and computes
//   y_r = f(x) W_r^T + b_r      (f = copy_to_parallel: identity forward, allreduce backward)
// so each rank's output is its block of features. With gather_output the blocks are allgathered
// into the whole y (gather_features); without, y_r feeds a RowParallelLinear directly.
// Communication per call, N rows: backward one allreduce of N x I floats (dL/dx); forward, with
// gather_output only, one allgather of N x O/T floats per rank.
#pragma once

#include "comm/communicator.h"
#include "nn/linear.h"

namespace dtrain::tensorparallel {

class ColumnParallelLinear : public Module {
 public:
  // This rank's part of `whole` (its weights as they are now). InputError when T does not divide
  // the output features.
  ColumnParallelLinear(const Linear& whole, comm::Communicator& comm, bool gather_output);
  Variable forward(const Variable& x) override;

  const Variable& weight() const { return weight_; }
  const Variable& bias() const { return bias_; }

 private:
  comm::Communicator& comm_;
  bool gather_output_;
  Variable weight_, bias_;
};

}  // namespace dtrain::tensorparallel
