// The three tensor-parallel layers (column_parallel_linear.h, row_parallel_linear.h,
// channel_parallel_conv.h): each takes its slice of a whole layer's weights and joins the
// collectives of regions.h around the local op.
#include <fmt/format.h>

#include "autograd/ops/conv.h"
#include "autograd/ops/linear.h"
#include "core/error.h"
#include "tensorparallel/channel_parallel_conv.h"
#include "tensorparallel/column_parallel_linear.h"
#include "tensorparallel/regions.h"
#include "tensorparallel/row_parallel_linear.h"

namespace dtrain::tensorparallel {

namespace {

void check_divides(std::int64_t features, int parts, const char* what) {
  if (features % parts != 0)
    throw InputError(fmt::format("{} {} do not split over {} tensor-parallel ranks: use a T that divides {}", features,
                                 what, parts, features));
}

// The block `part` of `parts` of a whole parameter along dim 0 (rows of W, entries of b).
Tensor rows_of(const Variable& whole, int part, int parts) {
  const std::int64_t n = whole.data().size(0) / parts;
  return slice_dim0(whole.data(), part * n, (part + 1) * n);
}

// y [N, O] + b [O] on every row; the bias's gradient is the column sums of dL/dy.
Variable add_row_bias(const Variable& y, const Variable& b) {
  Tensor out = y.data().to_plain().clone();
  const std::int64_t rows = out.size(0), cols = out.size(1);
  const float* bias = b.data().data<float>();
  for (std::int64_t n = 0; n < rows; ++n)
    for (std::int64_t o = 0; o < cols; ++o) out.data<float>()[n * cols + o] += bias[o];
  return Variable::from_op(std::move(out), "add_bias", {y, b}, [rows, cols](const Tensor& g) -> std::vector<Tensor> {
    const Tensor plain = g.to_plain();
    Tensor db = Tensor::zeros({cols});
    for (std::int64_t n = 0; n < rows; ++n)
      for (std::int64_t o = 0; o < cols; ++o) db.data<float>()[o] += plain.data<float>()[n * cols + o];
    return {plain, db};
  });
}

}  // namespace

ColumnParallelLinear::ColumnParallelLinear(const Linear& whole, comm::Communicator& comm, bool gather_output)
    : Module("column_parallel_linear"), comm_(comm), gather_output_(gather_output) {
  check_divides(whole.out_features(), comm.size(), "output features");
  weight_ = register_parameter("weight", rows_of(whole.weight(), comm.rank(), comm.size()));
  if (whole.bias().defined()) bias_ = register_parameter("bias", rows_of(whole.bias(), comm.rank(), comm.size()));
}

Variable ColumnParallelLinear::forward(const Variable& x) {
  Variable y = ops::linear(copy_to_parallel(x, comm_), weight_, bias_);
  return gather_output_ ? gather_features(y, comm_) : y;
}

RowParallelLinear::RowParallelLinear(const Linear& whole, comm::Communicator& comm)
    : Module("row_parallel_linear"), comm_(comm) {
  check_divides(whole.in_features(), comm.size(), "input features");
  weight_ = register_parameter("weight", slice_dim1(whole.weight().data(), comm.rank(), comm.size()));
  if (whole.bias().defined()) bias_ = register_parameter("bias", whole.bias().data().to_plain().clone());
}

Variable RowParallelLinear::forward(const Variable& x) {
  Variable y = reduce_from_parallel(ops::linear(x, weight_, Variable()), comm_);
  if (!bias_.defined()) return y;
  return add_row_bias(y, bias_);
}

ChannelParallelConv2d::ChannelParallelConv2d(const Conv2d& whole, comm::Communicator& comm)
    : Module("channel_parallel_conv2d"), comm_(comm), geometry_(whole.geometry()) {
  check_divides(whole.out_channels(), comm.size(), "output channels");
  weight_ = register_parameter("weight", rows_of(whole.weight(), comm.rank(), comm.size()));
  if (whole.bias().defined()) bias_ = register_parameter("bias", rows_of(whole.bias(), comm.rank(), comm.size()));
}

Variable ChannelParallelConv2d::forward(const Variable& x) {
  return gather_features(ops::conv2d(copy_to_parallel(x, comm_), weight_, bias_, geometry_), comm_);
}

}  // namespace dtrain::tensorparallel
