// Naive reference kernels: direct loops that follow each operation's definition, in f32 and f64,
// on plain layouts (other layouts are reordered first). Slow on purpose: they are the ground
// truth the fast kernels are tested against and the kernels gradient checks run on in f64.
#pragma once

#include "tensor/backend.h"

namespace dtrain {

class ReferenceBackend : public Backend {
 public:
  std::string_view name() const override { return "reference"; }

  void fill(Tensor& t, double value) override;
  void copy(const Tensor& src, Tensor& dst) override;
  Tensor add(const Tensor& a, const Tensor& b) override;
  void axpy(double alpha, const Tensor& x, Tensor& y) override;
  void scale(Tensor& t, double alpha) override;
  Tensor mul(const Tensor& a, const Tensor& b) override;
  Tensor relu_forward(const Tensor& x) override;
  Tensor relu_backward(const Tensor& y, const Tensor& dy) override;
  Tensor dropout_mask(const Shape& shape, double keep_prob, std::uint64_t seed) override;
  double sum(const Tensor& x) override;
  double sum_of_squares(const Tensor& x) override;
  bool all_finite(const Tensor& x) override;

  Tensor linear_forward(const Tensor& x, const Tensor& w, const Tensor* b) override;
  Tensor linear_backward_data(const Tensor& dy, const Tensor& w) override;
  WeightGrads linear_backward_weights(const Tensor& dy, const Tensor& x, bool with_bias,
                                      const WeightGradInto& into) override;

  Tensor conv2d_forward(const Tensor& x, const Tensor& w, const Tensor* b, const Conv2dGeometry& g) override;
  Tensor conv2d_backward_data(const Tensor& dy, const Tensor& w, const Shape& x_shape, Layout x_layout,
                              const Conv2dGeometry& g) override;
  WeightGrads conv2d_backward_weights(const Tensor& dy, const Tensor& x, const Shape& w_shape, bool with_bias,
                                      const Conv2dGeometry& g) override;

  PoolForward pool2d_forward(const Tensor& x, PoolKind kind, const Pool2dGeometry& g) override;
  Tensor pool2d_backward(const Tensor& dy, const Tensor& x, const PoolForward& fwd, PoolKind kind,
                         const Pool2dGeometry& g) override;

  BatchNormForward batch_norm_forward_training(const Tensor& x, const Tensor& gamma, const Tensor& beta,
                                               double eps) override;
  Tensor batch_norm_forward_inference(const Tensor& x, const Tensor& gamma, const Tensor& beta, const Tensor& mean,
                                      const Tensor& var, double eps) override;
  BatchNormGrads batch_norm_backward(const Tensor& dy, const Tensor& x, const Tensor& gamma, const Tensor& mean,
                                     const Tensor& var, double eps) override;

  Tensor softmax_cross_entropy_forward(const Tensor& logits, const Tensor& labels, double smoothing,
                                       Tensor& probs) override;
  Tensor softmax_cross_entropy_backward(const Tensor& probs, const Tensor& labels, double smoothing,
                                        double dloss) override;
  std::int64_t count_correct(const Tensor& logits, const Tensor& labels) override;

  void sgd_update(Tensor& w, const Tensor& g, Tensor& v, const SgdHyper& h) override;
  void rmsprop_update(Tensor& w, const Tensor& g, Tensor& s, const RmspropHyper& h) override;
  void adam_update(Tensor& w, const Tensor& g, Tensor& m, Tensor& v, const AdamHyper& h) override;
};

// Output size of a convolution or pooling window along one axis; throws ShapeError when the
// window does not fit.
std::int64_t window_output_size(std::int64_t in, std::int64_t kernel, std::int64_t stride, std::int64_t pad,
                                const char* what);

// Counter-based uniform [0, 1) from (seed, index): splitmix64 of the pair (Steele et al. 2014).
double counter_uniform(std::uint64_t seed, std::uint64_t index);

}  // namespace dtrain
