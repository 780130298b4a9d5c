// A convolution split by its output channels over the T ranks of a communicator (ChainerMN's
// parallel convolution example): rank r holds filters [r O/T, (r+1) O/T) of W [O, C, KH, KW] and
// of b, convolves the whole input and allgathers the channel blocks into the whole output:
//   y = gather_features(conv(f(x), W_r, b_r))     (f = copy_to_parallel)
// Communication per call, N samples: forward one allgather of N x O/T x OH x OW floats per rank;
// backward one allreduce of N x C x H x W floats (dL/dx, summed over the ranks' filters).
#pragma once

#include "comm/communicator.h"
#include "nn/conv2d.h"

namespace dtrain::tensorparallel {

class ChannelParallelConv2d : public Module {
 public:
  // This rank's part of `whole`. InputError when T does not divide the output channels.
  ChannelParallelConv2d(const Conv2d& whole, comm::Communicator& comm);
  Variable forward(const Variable& x) override;

  const Variable& weight() const { return weight_; }
  const Variable& bias() const { return bias_; }

 private:
  comm::Communicator& comm_;
  Conv2dGeometry geometry_;
  Variable weight_, bias_;
};

}  // namespace dtrain::tensorparallel
