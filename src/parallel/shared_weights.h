// Weights and optimizer state shared by the ranks of one host (shm allreduce, no double
// buffering). Every replica of a data-parallel run holds the same weights and makes the same
// update, so ranks that can map each other's memory keep one copy of the parameters and of the
// optimizer's state in shared memory, and each rank updates only its part of it: for every
// gradient bucket, the block of elements it sums in the shm allreduce (collective.h: block_of).
// The update's memory traffic (LeNet: weights, momenta and gradients of 3.3 M parameters, 66 MB
// a step) is then split between the ranks instead of repeated on each, as ZeRO stage 1
// (Rajbhandari et al. 2020) shards the optimizer state, without its all-gather: the updated
// weights already lie where every rank reads them.
//
// A step: (1) every rank has finished forward and backward and every bucket is summed, which a
// barrier after the last bucket makes sure of (from here on no rank reads the weights this
// step); (2) each rank updates its part; (3) a barrier: every part is written before any rank's
// next forward reads the weights. The arithmetic per element is the optimizer's own, so the
// weights are bit for bit those of every rank updating everything. Checkpoints, evaluation and
// resume read and write the one copy.
//
// A layer-wise optimizer (LARS, LAMB: each tensor's step is scaled by its whole norm, and a
// rank's part is a range of it) splits its step in two (optim/optimizer.h, set_norm_reducer):
// every rank's parts' sums of squares, summed over the ranks in double and in rank order (one
// allgather of 2 doubles per parameter, comm/exact_sum.h), then each rank's update of its parts
// with the whole tensors' norms. Those weights equal one rank's whole update up to the order of
// the norms' sums (tests/optim/layerwise_test.cpp, tests/parallel/shared_weights_test.cpp).
// Not with double buffering: there the update of step t-1 runs while other ranks may still be
// in step t's forward, reading the weights.
#pragma once

#include <span>
#include <vector>

#include "autograd/variable.h"
#include "optim/optimizer.h"
#include "parallel/buckets.h"
#include "parallel/comm_worker.h"

namespace dtrain {

class SharedWeights {
 public:
  // Whether the parameters can move (plain layouts on the CPU: the update splits them by
  // storage range).
  static bool supported(const std::vector<Variable>& params);

  // Collective. Moves the parameters (rank 0's values) and the optimizer's state (allocated
  // first; rank 0's) into one region of shared memory. `buckets` gives each rank its part.
  SharedWeights(std::vector<Variable> params, Optimizer& optimizer, CommWorker& worker, const BucketLayout& buckets);
  // Gives the parameters and the state private copies again (the shared memory lives as long as
  // the communicator; the model may outlive it).
  ~SharedWeights();
  SharedWeights(const SharedWeights&) = delete;
  SharedWeights& operator=(const SharedWeights&) = delete;

  // (2) and (3) above: this rank's part of the update, then the barrier. The caller waits for (1).
  void update();
  // Per parameter, the elements this rank updates.
  std::span<const Optimizer::Range> part() const { return part_; }

 private:
  std::vector<Variable> params_;
  Optimizer& optimizer_;
  CommWorker& worker_;
  std::vector<Optimizer::Range> part_;
};

// Per parameter, the elements rank `rank` of `ranks` sums in the shm allreduce of the parameter's
// bucket (buckets.h: summed_slice).
std::vector<Optimizer::Range> bucket_block_ranges(const BucketLayout& buckets, const std::vector<std::int64_t>& numels,
                                                  int rank, int ranks);

}  // namespace dtrain
