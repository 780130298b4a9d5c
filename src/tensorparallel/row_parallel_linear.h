// A linear layer split by its input features over the T ranks of a communicator (Megatron-LM's
// RowParallelLinear): rank r holds columns [r I/T, (r+1) I/T) of W [O, I] and takes its block of
// the input features x_r (a ColumnParallelLinear's output without gather), and
//   y = g(x_r W_r^T) + b        (g = reduce_from_parallel: allreduce forward, identity backward)
// with the bias whole on every rank, added once after the sum.
// Communication per call, N rows: forward one allreduce of N x O floats; backward none.
// A ColumnParallelLinear -> RowParallelLinear pair thus costs one allreduce forward (N x O) and
// one backward (N x I), as Megatron's MLP block (Narayanan et al. 2021, section 2.3).
#pragma once

#include "comm/communicator.h"
#include "nn/linear.h"

namespace dtrain::tensorparallel {

class RowParallelLinear : public Module {
 public:
  // This rank's part of `whole`. InputError when T does not divide the input features.
  RowParallelLinear(const Linear& whole, comm::Communicator& comm);
  Variable forward(const Variable& x) override;

  const Variable& weight() const { return weight_; }
  const Variable& bias() const { return bias_; }

 private:
  comm::Communicator& comm_;
  Variable weight_, bias_;
};

}  // namespace dtrain::tensorparallel
