// Gradient buckets (as in PyTorch DDP and Horovod's tensor fusion): parameters are grouped, in
// the order their gradients become final during backward (the reverse of the order the model
// registers them), into buckets of about `bucket_bytes`. Each bucket is one flat buffer, so one
// allreduce moves many small gradients at once (paying the latency alpha once per bucket instead
// of once per tensor), and a bucket's allreduce starts the moment its last gradient is final,
// overlapping the rest of backward.
//
// Each gradient is multiplied by `grad_scale` (1 / (ranks x accumulated micro-batches): the
// allreduced sum is then the mean) as it is copied into its bucket, so scaling costs no pass of
// its own over the bucket.
//
// With f32 on the wire, a bucket of one parameter (a tensor at least as large as the threshold)
// is not copied when its gradient is a plain f32 tensor nobody else holds
// (Tensor::storage_unshared; the autograd engine drops its own handle before the hook runs): the
// bucket adopts that tensor and the allreduce runs in place in it, as PyTorch DDP's
// gradient_as_bucket_view avoids the copy. The scaling then moves to the communication thread,
// fused with the finite check after the allreduce (the sum of the unscaled gradients, then
// times grad_scale). This saves the compute thread a copy of every large gradient (12.8 MB a
// step for LeNet's largest weight).
//
// Where a bucket has a buffer of its own (several parameters, or one that must lie in shared
// memory), each parameter's slot in it is that parameter's gradient destination
// (Variable::set_grad_destination): an op that can (linear's weight gradient) writes the gradient
// straight into its slot, and the hook then has nothing to copy; that gradient is scaled on the
// communication thread, as an adopted one is. Other gradients are copied in.
//
// Where the f32 buckets lie in the ranks' shared memory (shm), no gradient is scaled before the
// allreduce: the rank that sums a block of the bucket scales it and checks it for NaN and Inf while
// the sums are in cache (Communicator::allreduce_scaled), which saves the communication thread a
// pass over every bucket (read and write, 12.8 MB a step for LeNet). LeNet on 2 ranks of the
// 2-core VM: 0.6 ms a step faster (median of 11 interleaved pairs, faster in all 11), scaling
// efficiency over one process 0.94 against 0.92.
//
// Communication in f16 or bf16 (ChainerMN's fp16 allreduce): each gradient leaves backward in the
// wire type. The hook writes it times grad_scale (so the sum stays in f16's range), rounded to
// the 16-bit type, straight into its slot of the bucket's wire buffer: one pass, as the scaled
// copy into an f32 bucket is, and no bucket adopts a gradient. The bucket is allreduced in the
// 16-bit type (the additions are done in f32 and rounded once per addition, see comm/reduce.h),
// and its sums are widened into the f32 bucket and checked for NaN and Inf in one pass
// (comm/reduce.h: scaled_to_16bit, widen_all_finite). Against casting an f32 bucket on the
// communication thread (a scaling pass for adopted gradients, the cast, the cast back, the
// check), that halves the bytes the passes move, 12 an element instead of 24. The wire carries
// half the bytes; each gradient element carries about log2(p) + 1 roundings to 11 (f16) or 8
// (bf16) significant bits.
//
// In a step without accumulation each wire slot is also its parameter's scaled gradient
// destination (Variable::set_scaled_grad_destination): an op that can write the gradient scaled in
// the wire type as it computes it (a linear layer's or a convolution's weight gradient in a bf16
// run with a bf16 wire) does,
// and the hook has nothing left to do (LeNet on 2 ranks in bf16: 22.3 -> 21.0 ms a step).
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "autograd/variable.h"
#include "comm/algorithm.h"
#include "comm/bucket_plan.h"
#include "tensor/dtype.h"

namespace dtrain {

// dst = scale * src over n floats in one pass (read src, write dst): how a gradient enters its
// bucket. Public so that dtrain calibrate times this very loop (calibration/calibrate_compute.h).
void scaled_copy(const float* src, float* dst, std::size_t n, float scale);

namespace comm {
class Communicator;
}

// The elements [first, second) of parameter `param` (of `numel` elements) whose sums rank `rank`
// of `ranks` makes in a block-wise reduction of its bucket (shm; comm/algorithms/collective.h:
// block_of): the parameter's slot in the bucket intersected with the rank's block; first ==
// second where they do not meet.
std::pair<std::int64_t, std::int64_t> summed_slice(const BucketLayout& layout, std::size_t param, std::int64_t numel,
                                                   int rank, int ranks);

// One region of `bytes` (zeroed, 64-byte aligned, alive as long as the buckets) for the buffers
// the allreduce runs on: the f32 buckets, or the f16/bf16 wire buffers.
using BucketMemory = std::function<std::span<std::byte>(std::size_t bytes)>;

class GradientBuckets {
 public:
  // `sets` independent copies of the buffers (2 for double buffering). With `shared`, the buffers
  // the allreduce runs on are carved out of the one region it gives (the ranks' shared memory for
  // shm, so it reduces them in place; called once), and one-parameter buckets adopt no f32
  // gradient (adopts_gradients).
  GradientBuckets(const std::vector<Variable>& params, std::vector<std::string> names, std::size_t bucket_bytes,
                  DType comm_dtype, int sets, double grad_scale = 1.0, const BucketMemory& shared = {});
  // Removes the gradient destinations it gave the parameters.
  ~GradientBuckets();
  GradientBuckets(const GradientBuckets&) = delete;
  GradientBuckets& operator=(const GradientBuckets&) = delete;

  const BucketLayout& layout() const { return layout_; }
  std::size_t num_buckets() const { return layout_.buckets.size(); }

  // Starts a step on buffer set `set`: no gradient received yet; the parameters' gradient
  // destinations become their slots in this set. With a 16-bit wire and `scaled_destinations`
  // (when the step's one backward pass is the one whose gradients are added: no accumulation),
  // their wire slots become scaled destinations too (Variable::set_scaled_grad_destination), each
  // given up when its gradient is added.
  void begin(int set, bool scaled_destinations = false);
  // Copies parameter i's gradient times grad_scale (undefined: zeros) into set `set`, or adopts
  // it (see above). Returns the buckets that can now be submitted, in bucket order: a bucket is
  // released when it is complete and every bucket before it was released, so all ranks allreduce
  // the same buckets in the same order.
  std::vector<std::size_t> add(std::size_t param, const Tensor& grad, int set);
  // Marks parameters that received no gradient this step as zero; returns the buckets released.
  std::vector<std::size_t> complete(int set);

  // Runs on the communication thread: cast, allreduce, cast back, and check every element is
  // finite (the first parameter that is not is remembered for the caller).
  void reduce(comm::Communicator& comm, std::size_t bucket, int set, comm::Algorithm algorithm);
  // The gradient of parameter i in set `set`: a view into the bucket (no copy); the allreduced
  // mean once reduce() ran (in this rank's block only, after set_own_block_only()).
  Tensor gradient(std::size_t param, int set) const;
  // Whether the bucket holds an adopted gradient in set `set` this step (for tests and traces).
  bool adopted(std::size_t bucket, int set) const;
  // Whether parameter i's gradient was written straight into its slot this step (no copy).
  bool written_in_place(std::size_t param, int set) const;
  // The first parameter with a NaN or Inf after the last reduce of `set`, quoted ("'fc.weight'"),
  // "" if none. Where only this rank's block is summed (set_own_block_only) and another rank's
  // block holds it, every parameter of its bucket ("'a' or 'b' (summed on another rank)").
  std::string non_finite_parameter(int set) const;
  // From now on, with f32 buckets in shared memory (shm): each rank needs the sums of its own
  // block of every bucket only (collective.h: block_of), as ranks that share their weights
  // update just that block (shared_weights.h); the other blocks of gradient() keep this rank's
  // own unsummed values. Saves the copy of every sum to the other ranks. Returns whether it
  // applies (false for any other allreduce, which sums everything anyway).
  bool set_own_block_only();
  std::size_t total_bytes() const;

 private:
  std::vector<std::size_t> release(int set);
  void add_to_wire(std::size_t param, const Tensor& grad, bool plain, int set);
  // Parameter i's slot in the wire buffer of set `set` (16-bit wire only).
  Tensor wire_slot(std::size_t param, int set) const;

  BucketLayout layout_;
  std::vector<Variable> params_;
  std::vector<std::string> names_;
  std::vector<Shape> shapes_;
  DType comm_dtype_;
  float grad_scale_;
  // f32 buckets in shared memory (shm): every gradient enters its slot unscaled, and the
  // allreduce scales the sums and checks them while it makes them (Communicator::allreduce_scaled).
  bool scale_in_allreduce_;
  bool own_block_only_ = false;
  // The bucket's own buffer in set `set`, allocated on first use for one-parameter buckets.
  Tensor& owned_buffer(int set, std::size_t bucket);

  struct Set {
    std::vector<Tensor> f32;     // per bucket: this step's flat buffer (owned or an adopted gradient)
    std::vector<Tensor> owned;   // per bucket: the buffer gradients are copied into
    std::vector<char> unscaled;  // per parameter: adopted or written in place, not yet times grad_scale
    std::vector<Tensor> wire;    // per bucket, comm_dtype (unused for f32)
    std::vector<int> missing;    // per bucket: gradients not yet received
    std::vector<char> received;  // per parameter
    std::vector<char> in_place;  // per parameter: written into its slot by backward this step
    std::size_t next_release = 0;
    std::vector<std::string> bad;  // per bucket: first non-finite parameter
  };
  std::vector<Set> sets_;
};

}  // namespace dtrain
