// The fast CPU backend: oneDNN primitives (convolution, pooling, batch norm; activations kept in
// nChw16c, or nChw8c on CPUs without AVX-512), oneDNN's sgemm or OpenBLAS for linear layers
// (kernels/cpu/gemm.h), and OpenMP loops for elementwise work. f32, plus bf16 activations in bf16
// compute precision (the outputs of convolutions, batch norm, relu_forward_activation and
// add_activation; read by convolution, linear, pooling, ReLU, batch norm and addition) and bf16
// gradients between them (a convolution's, batch norm's or ReLU's dx, read by the backward of
// convolution, batch norm and ReLU): other dtypes run on the reference implementation it derives
// from.
//
// Layouts: 4-D kernels compute in the blocked layout (dnnl_util.h: compute_layout) when the
// channel count fills its blocks and in plain layout otherwise (inputs in another layout are
// reordered first). Convolution outputs are blocked when O fills the blocks; pooling, batch norm,
// relu and elementwise outputs keep their input's layout. Weights, biases and their gradients are
// always plain.
#pragma once

#include <cstddef>
#include <initializer_list>

#include "tensor/kernels/reference/reference_backend.h"

namespace dtrain {

class CpuBackend : public ReferenceBackend {
 public:
  std::string_view name() const override { return "cpu"; }

  void fill(Tensor& t, double value) override;
  void copy(const Tensor& src, Tensor& dst) override;
  Tensor add(const Tensor& a, const Tensor& b) override;
  void axpy(double alpha, const Tensor& x, Tensor& y) override;
  void scale(Tensor& t, double alpha) override;
  Tensor mul(const Tensor& a, const Tensor& b) override;
  Tensor relu_forward(const Tensor& x) override;
  Tensor relu_backward(const Tensor& y, const Tensor& dy) override;
  Tensor relu_forward_activation(const Tensor& x) override;
  Tensor add_activation(const Tensor& a, const Tensor& b) override;
  Tensor dropout_mask(const Shape& shape, double keep_prob, std::uint64_t seed) override;
  double sum(const Tensor& x) override;
  double sum_of_squares(const Tensor& x) override;
  bool all_finite(const Tensor& x) override;

  Tensor linear_forward(const Tensor& x, const Tensor& w, const Tensor* b) override;
  Tensor linear_backward_data(const Tensor& dy, const Tensor& w) override;
  Tensor linear_weight_operand(const Tensor& w) override;
  WeightGrads linear_backward_weights(const Tensor& dy, const Tensor& x, bool with_bias,
                                      const WeightGradInto& into) override;

  Tensor conv2d_forward(const Tensor& x, const Tensor& w, const Tensor* b, const Conv2dGeometry& g) override;
  Tensor conv2d_backward_data(const Tensor& dy, const Tensor& w, const Shape& x_shape, Layout x_layout,
                              const Conv2dGeometry& g) override;
  WeightGrads conv2d_backward_weights(const Tensor& dy, const Tensor& x, const Shape& w_shape, bool with_bias,
                                      const Conv2dGeometry& g) override;
  Tensor conv2d_forward_keeping(const Tensor& x, const Tensor& w, const Tensor* b, const Conv2dGeometry& g,
                                Tensor& kept) override;
  ConvGrads conv2d_backward(const Tensor& dy, const Tensor& x, const Tensor& kept, const Tensor& w, bool need_dx,
                            bool with_bias, const Conv2dGeometry& g, const WeightGradInto& into) override;

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

 private:
  static Tensor relu_to_bf16(const Tensor& x);
  static Tensor relu_backward_bf16(const Tensor& y, const Tensor& dy);
};

Backend& cpu_backend();

// Whether a tensor (every tensor) is f32: the fast kernels' condition; other dtypes fall back to
// the reference.
inline bool is_f32(const Tensor& t) { return t.dtype() == DType::kF32; }
// f32, or a bf16 activation (relu_forward_activation), as the activation-reading kernels take.
inline bool is_f32_or_bf16(const Tensor& t) { return t.dtype() == DType::kF32 || t.dtype() == DType::kBF16; }
inline bool all_f32(std::initializer_list<const Tensor*> ts) {
  for (const Tensor* t : ts) {
    if (!is_f32(*t)) return false;
  }
  return true;
}

// Entries in the fast backend's oneDNN primitive cache, and how many were built (cache misses).
std::size_t cpu_primitive_cache_size();
std::size_t cpu_primitive_cache_misses();

}  // namespace dtrain
