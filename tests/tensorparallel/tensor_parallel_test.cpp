// Tensor-parallel layers on the local-threads transport at T = 2 and 4: a column -> row MLP, a
// gathered column layer and a channel-parallel convolution give the whole layer's output and
// gradients (every rank builds the whole layer from one seed and keeps its slice), and an
// instrumented transport counts exactly the collectives and bytes their header comments state.
#include <gtest/gtest.h>

#include <cmath>
#include <mutex>

#include "autograd/ops.h"
#include "comm/instrumented_transport.h"
#include "comm/local_transport.h"
#include "core/error.h"
#include "core/random.h"
#include "core/threads.h"
#include "tensorparallel/channel_parallel_conv.h"
#include "tensorparallel/column_parallel_linear.h"
#include "tensorparallel/expect_close.h"
#include "tensorparallel/regions.h"
#include "tensorparallel/row_parallel_linear.h"

namespace dtrain::tensorparallel {
namespace {

Tensor random_tensor(const Shape& shape, std::uint64_t seed) {
  Rng rng(seed);
  std::vector<float> v(static_cast<std::size_t>(shape.numel()));
  for (float& x : v) x = static_cast<float>(rng.normal());
  return Tensor::from_vector(v, shape);
}

// A loss whose gradient differs for every output element: cross-entropy of the output, flattened
// per row, times fixed random weights.
Variable probe_loss(const Variable& y) {
  const Variable weighted = ops::flatten(ops::mul(y, Variable(random_tensor(y.shape(), 77))));
  return ops::softmax_cross_entropy(weighted, Tensor::from_labels(std::vector<std::int32_t>(y.shape()[0], 0)));
}

constexpr std::int64_t kRows = 6, kIn = 32, kHidden = 64, kOut = 16;

TEST(TensorParallel, ColumnThenRowEqualsTheWholeMlpWithOneAllreduceEachWay) {
  Rng rng(3);
  Linear first(kIn, kHidden, true, rng), second(kHidden, kOut, true, rng);
  const Tensor x = random_tensor({kRows, kIn}, 1);
  Variable xv(x, true);
  Variable want_y = second(ops::relu(first(xv)));
  probe_loss(want_y).backward();
  for (int t : {2, 4}) {
    std::mutex mu;
    comm::run_local_transports(t, [&](comm::Transport& base) {
      set_num_threads(1);
      comm::InstrumentedTransport counted(base);
      comm::Communicator c(counted);
      ColumnParallelLinear column(first, c, false);
      RowParallelLinear row(second, c);
      Variable xr(x, true);
      Variable y = row(ops::relu(column(xr)));
      const std::uint64_t after_forward = c.stats().collectives;
      const std::uint64_t forward_bytes = counted.counts().bytes_sent;
      probe_loss(y).backward();
      const int r = c.rank();
      const std::lock_guard lock(mu);
      expect_close(y.data(), want_y.data(), "output");
      expect_close(xr.grad(), xv.grad(), "dL/dx");
      expect_close(column.weight().grad(), slice_dim0(first.weight().grad(), r * kHidden / t, (r + 1) * kHidden / t),
                   "column weight gradient");
      expect_close(row.weight().grad(), slice_dim1(second.weight().grad(), r, t), "row weight gradient");
      expect_close(row.bias().grad(), second.bias().grad(), "row bias gradient");
      // One allreduce of N x O forward (row), one of N x I backward (column), nothing else.
      EXPECT_EQ(after_forward, 1u);
      EXPECT_EQ(c.stats().collectives, 2u);
      const auto chunk = c.options().chunk_bytes;
      EXPECT_EQ(forward_bytes,
                comm::allreduce_cost(comm::Algorithm::kRing, t, r, kRows * kOut, DType::kF32, chunk).bytes_sent);
      EXPECT_EQ(counted.counts().bytes_sent,
                forward_bytes +
                    comm::allreduce_cost(comm::Algorithm::kRing, t, r, kRows * kIn, DType::kF32, chunk).bytes_sent);
    });
  }
}

TEST(TensorParallel, AGatheredColumnLayerEqualsTheWholeLayer) {
  Rng rng(4);
  Linear whole(kIn, kHidden, true, rng);
  const Tensor x = random_tensor({kRows, kIn}, 2);
  Variable xv(x, true);
  Variable want = whole(xv);
  probe_loss(want).backward();
  for (int t : {2, 4}) {
    std::mutex mu;
    comm::run_local_transports(t, [&](comm::Transport& base) {
      comm::InstrumentedTransport counted(base);
      comm::Communicator c(counted);
      ColumnParallelLinear layer(whole, c, true);
      Variable xr(x, true);
      Variable y = layer(xr);
      const std::uint64_t forward_bytes = counted.counts().bytes_sent;
      probe_loss(y).backward();
      const std::lock_guard lock(mu);
      expect_close(y.data(), want.data(), "output");
      expect_close(xr.grad(), xv.grad(), "dL/dx");
      EXPECT_EQ(c.stats().collectives, 2u);  // the allgather, then dL/dx's allreduce
      EXPECT_EQ(forward_bytes,
                comm::allgather_cost(t, c.rank(), kRows * kHidden / t * 4, c.options().chunk_bytes).bytes_sent);
    });
  }
}

TEST(TensorParallel, AChannelParallelConvolutionEqualsTheWholeConvolution) {
  Rng rng(5);
  Conv2d whole(3, 8, 3, 1, 1, true, rng);
  const Tensor x = random_tensor({2, 3, 6, 6}, 3);
  Variable xv(x, true);
  Variable want = whole(xv);
  probe_loss(want).backward();
  for (int t : {2, 4}) {
    std::mutex mu;
    comm::run_local_transports(t, [&](comm::Transport& base) {
      set_num_threads(1);
      comm::InstrumentedTransport counted(base);
      comm::Communicator c(counted);
      ChannelParallelConv2d layer(whole, c);
      Variable xr(x, true);
      Variable y = layer(xr);
      const std::uint64_t forward_bytes = counted.counts().bytes_sent;
      probe_loss(y).backward();
      const int r = c.rank();
      const std::lock_guard lock(mu);
      expect_close(y.data(), want.data(), "output");
      expect_close(xr.grad(), xv.grad(), "dL/dx");
      expect_close(layer.weight().grad(), slice_dim0(whole.weight().grad(), r * 8 / t, (r + 1) * 8 / t), "filters");
      const auto chunk = c.options().chunk_bytes;
      EXPECT_EQ(forward_bytes, comm::allgather_cost(t, r, 2 * 8 / t * 6 * 6 * 4, chunk).bytes_sent);
      EXPECT_EQ(counted.counts().bytes_sent,
                forward_bytes +
                    comm::allreduce_cost(comm::Algorithm::kRing, t, r, 2 * 3 * 6 * 6, DType::kF32, chunk).bytes_sent);
    });
  }
}

TEST(TensorParallel, ASplitThatDoesNotDivideNamesTheFix) {
  Rng rng(6);
  Linear odd(10, 6, true, rng);
  comm::run_local_transports(4, [&](comm::Transport& base) {
    comm::Communicator c(base);
    EXPECT_THROW(ColumnParallelLinear(odd, c, false), InputError);
    EXPECT_THROW(RowParallelLinear(odd, c), InputError);
  });
}

}  // namespace
}  // namespace dtrain::tensorparallel
