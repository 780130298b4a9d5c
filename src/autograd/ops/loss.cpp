#include "autograd/ops/loss.h"

#include "core/error.h"
#include "tensor/backend.h"

namespace dtrain::ops {

Variable softmax_cross_entropy(const Variable& logits, const Tensor& labels, double smoothing) {
  if (!(smoothing >= 0 && smoothing < 1)) {
    throw InputError(fmt::format("label smoothing must be in [0, 1), got {}", smoothing));
  }
  const Tensor z = f32_operand(logits.data());
  if (z.dim() != 2 || labels.dim() != 1 || labels.size(0) != z.size(0)) {
    throw ShapeError(
        fmt::format("softmax_cross_entropy: logits {} and labels {} (need [N, K] and [N])", z.shape(), labels.shape()));
  }
  Tensor probs;
  Tensor loss = dispatch(z).softmax_cross_entropy_forward(z, labels, smoothing, probs);
  return Variable::from_op(
      std::move(loss), "softmax_cross_entropy", {logits}, [probs, labels, smoothing](const Tensor& g) {
        return std::vector<Tensor>{dispatch(probs).softmax_cross_entropy_backward(probs, labels, smoothing, g.item())};
      });
}

std::int64_t count_correct(const Tensor& logits, const Tensor& labels) {
  return dispatch(logits).count_correct(logits, labels);
}

}  // namespace dtrain::ops
