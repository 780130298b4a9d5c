#include "tensorparallel/parallelize.h"

#include "nn/conv2d.h"
#include "nn/linear.h"
#include "tensorparallel/channel_parallel_conv.h"
#include "tensorparallel/column_parallel_linear.h"
#include "tensorparallel/regions.h"
#include "tensorparallel/row_parallel_linear.h"

namespace dtrain::tensorparallel {

std::vector<SplitCandidate> split_candidates(const Sequential& chain) {
  std::vector<SplitCandidate> out;
  for (std::size_t i = 0; i < chain.size(); ++i) {
    const Module& m = *chain.layer(i);
    SplitCandidate c{m.type()};
    if (const auto* linear = dynamic_cast<const Linear*>(&m)) {
      c.in_features = linear->in_features();
      c.out_features = linear->out_features();
    } else if (const auto* conv = dynamic_cast<const Conv2d*>(&m)) {
      c.in_features = conv->in_channels();
      c.out_features = conv->out_channels();
    }
    out.push_back(std::move(c));
  }
  return out;
}

std::shared_ptr<Sequential> parallelize(const Sequential& whole, comm::Communicator& comm) {
  const std::vector<TensorSplit> plan = plan_tensor_split(split_candidates(whole), comm.size());
  auto out = std::make_shared<Sequential>(whole.type());
  for (std::size_t i = 0; i < whole.size(); ++i) {
    const std::shared_ptr<Module>& layer = whole.layer(i);
    std::shared_ptr<Module> part = layer;
    switch (plan[i]) {
      case TensorSplit::kWhole:
        break;
      case TensorSplit::kColumn:
      case TensorSplit::kColumnGathered:
        part = std::make_shared<ColumnParallelLinear>(dynamic_cast<const Linear&>(*layer), comm,
                                                      plan[i] == TensorSplit::kColumnGathered);
        break;
      case TensorSplit::kRow:
        part = std::make_shared<RowParallelLinear>(dynamic_cast<const Linear&>(*layer), comm);
        break;
      case TensorSplit::kChannel:
        part = std::make_shared<ChannelParallelConv2d>(dynamic_cast<const Conv2d&>(*layer), comm);
        break;
    }
    out->add(whole.layer_name(i), std::move(part));
  }
  return out;
}

Tensor part_of(const Tensor& whole, const Shape& part, int rank, int parts) {
  if (whole.shape() == part) return whole;
  if (whole.size(0) != part[0]) return slice_dim0(whole, rank * part[0], (rank + 1) * part[0]);
  return slice_dim1(whole, rank, parts);
}

}  // namespace dtrain::tensorparallel
