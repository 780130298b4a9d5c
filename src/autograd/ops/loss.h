// Softmax cross-entropy, fused for numerical stability, and accuracy.
#pragma once

#include <cstdint>

#include "autograd/variable.h"

namespace dtrain::ops {

// Mean over the batch of -log softmax(logits)[label]; logits [N, K], labels i32 [N]. With
// `smoothing` s, against the target (1 - s) onehot + s / K instead (label smoothing; backend.h).
// The gradient is (softmax(logits) - target) / N.
Variable softmax_cross_entropy(const Variable& logits, const Tensor& labels, double smoothing = 0.0);

// Number of rows whose arg-max equals the label.
std::int64_t count_correct(const Tensor& logits, const Tensor& labels);

}  // namespace dtrain::ops
