// The kernel interface. Every operation on tensor data goes through the Backend registered for
// the tensor's device, so ops, layers and optimizers never name a device or a library.
//
// CPU has two backends: the reference backend (naive loops, f32 and f64, plain layout; the
// ground truth that tests compare against and that double-precision gradient checks run on) and
// the fast backend (oneDNN and BLAS, f32, plain and channel-blocked). `dispatch` picks the reference
// backend for f64 tensors or inside a ReferenceKernelsScope, the fast one otherwise. A CUDA
// backend registers itself for DeviceType::kCUDA.
#pragma once

#include <cstdint>
#include <string_view>

#include "tensor/tensor.h"

namespace dtrain {

struct Conv2dGeometry {
  std::int64_t stride_h = 1, stride_w = 1;
  std::int64_t pad_h = 0, pad_w = 0;
};

enum class PoolKind : std::uint8_t { kMax, kAvg };

// Average pooling counts padded elements in the divisor (PyTorch's count_include_pad=True).
struct Pool2dGeometry {
  std::int64_t kernel_h = 2, kernel_w = 2;
  std::int64_t stride_h = 2, stride_w = 2;
  std::int64_t pad_h = 0, pad_w = 0;
};

// Whether pooling's backward pass hands each dy element as it is to one dx element: max pooling
// in windows that do not overlap (the CPU backend's bf16 path keeps that gradient in bf16).
inline bool routes_gradient_as_is(PoolKind kind, const Pool2dGeometry& g) {
  return kind == PoolKind::kMax && g.stride_h >= g.kernel_h && g.stride_w >= g.kernel_w;
}

struct PoolForward {
  Tensor y;
  Tensor workspace;  // backend-specific (argmax of max pooling); may be undefined
};

struct BatchNormForward {
  Tensor y;
  Tensor mean;  // [C] batch mean
  Tensor var;   // [C] biased batch variance
};

struct BatchNormGrads {
  Tensor dx, dgamma, dbeta;
};

struct WeightGrads {
  Tensor dw;
  Tensor db;  // undefined when the layer has no bias
};

// Where a layer's weight gradient dw may be written. f32: null (the backend allocates dw) or a
// plain f32 CPU tensor of dw's shape that receives dw. scaled: null or a plain 16-bit CPU tensor
// of dw's shape (a bucket's f16 or bf16 wire slot); a backend that can write `scale` times dw,
// rounded to nearest even, as it computes dw (the CPU's bf16 matmuls into bf16) writes it there
// instead; the others ignore it. dw is returned as the tensor written.
struct WeightGradInto {
  const Tensor* f32 = nullptr;
  const Tensor* scaled = nullptr;
  float scale = 1.0F;
};

struct ConvGrads {
  Tensor dx;  // undefined when the input needs no gradient
  WeightGrads weights;
};

struct SgdHyper {
  double lr = 0.01, momentum = 0.9, weight_decay = 0.0;
  bool nesterov = false;
  // Goyal et al. 2017's momentum correction: v = mu * velocity_scale * v - lr * g, with
  // velocity_scale = lr_t / lr_{t-1} (optim/sgd.h).
  double velocity_scale = 1.0;
};
struct RmspropHyper {
  double lr = 0.01, alpha = 0.99, eps = 1e-8, weight_decay = 0.0;
};
struct AdamHyper {
  double lr = 1e-3, beta1 = 0.9, beta2 = 0.999, eps = 1e-8, weight_decay = 0.0;
  std::int64_t step = 1;  // 1-based, for bias correction
};

class Backend {
 public:
  virtual ~Backend() = default;
  virtual std::string_view name() const = 0;

  // --- memory and elementwise (any layout; operands share shape and layout) ---
  virtual void fill(Tensor& t, double value) = 0;
  // dst = src, converting dtype and layout (same shape).
  virtual void copy(const Tensor& src, Tensor& dst) = 0;
  virtual Tensor add(const Tensor& a, const Tensor& b) = 0;
  virtual void axpy(double alpha, const Tensor& x, Tensor& y) = 0;  // y += alpha * x
  virtual void scale(Tensor& t, double alpha) = 0;                  // t *= alpha
  virtual Tensor mul(const Tensor& a, const Tensor& b) = 0;
  virtual Tensor relu_forward(const Tensor& x) = 0;
  virtual Tensor relu_backward(const Tensor& y, const Tensor& dy) = 0;  // dy * (y > 0)
  // The ReLU of a layer's activation, in the type this backend keeps activations in between
  // layers. The CPU backend in bf16 compute precision writes bf16: every kernel that reads
  // it in bf16 (convolution, linear, pooling) would round it to bf16 anyway, so its consumers
  // compute the same bits, it is rounded once instead of once per consumer and pass, and it is
  // kept for the backward pass in half the bytes (PyTorch's CPU autocast keeps activations in
  // bf16 too). The backward pass reads bf16 y; its gradient is bf16 where dy is (the mask is
  // exact), else f32.
  virtual Tensor relu_forward_activation(const Tensor& x) { return relu_forward(x); }
  // A residual addition of two activations, in the type this backend keeps activations in: the
  // CPU backend in bf16 compute precision adds two bf16 activations in f32 and rounds the sum to
  // bf16 once (PyTorch's CPU autocast adds bf16 tensors in bf16). A ReLU after it computes the
  // same bits as on the f32 sum, since rounding keeps the sign and 0.
  virtual Tensor add_activation(const Tensor& a, const Tensor& b) { return add(a, b); }
  // Keep-mask with values 0 or 1/keep_prob, from a counter-based generator: element i's value
  // depends only on (seed, i), so masks are reproducible and independent of threading.
  virtual Tensor dropout_mask(const Shape& shape, double keep_prob, std::uint64_t seed) = 0;
  virtual double sum(const Tensor& x) = 0;
  virtual double sum_of_squares(const Tensor& x) = 0;
  virtual bool all_finite(const Tensor& x) = 0;

  // --- linear: y[N, O] = x[N, I] w[O, I]^T + b[O] (plain) ---
  virtual Tensor linear_forward(const Tensor& x, const Tensor& w, const Tensor* b) = 0;
  virtual Tensor linear_backward_data(const Tensor& dy, const Tensor& w) = 0;
  // The weight as linear_forward and linear_backward_data read it: w, or in the CPU backend's
  // bf16 compute precision w rounded to bf16 once, which forward reads and the graph keeps for
  // backward-data (one rounding a step instead of two, kept in 2 bytes an element; the products
  // round their operands to bf16 anyway, so the bits are the same).
  virtual Tensor linear_weight_operand(const Tensor& w) { return w; }
  // `into` says where dw may go, so a gradient can land where it is needed without a copy
  // (autograd/variable.h: gradient_destination, scaled_gradient_destination).
  virtual WeightGrads linear_backward_weights(const Tensor& dy, const Tensor& x, bool with_bias,
                                              const WeightGradInto& into) = 0;

  // --- 2-D convolution: x [N, C, H, W], w [O, C, KH, KW] (plain), b [O] ---
  virtual Tensor conv2d_forward(const Tensor& x, const Tensor& w, const Tensor* b, const Conv2dGeometry& g) = 0;
  // dx in the layout `x_layout` (the layout x had in the forward pass).
  virtual Tensor conv2d_backward_data(const Tensor& dy, const Tensor& w, const Shape& x_shape, Layout x_layout,
                                      const Conv2dGeometry& g) = 0;
  virtual WeightGrads conv2d_backward_weights(const Tensor& dy, const Tensor& x, const Shape& w_shape, bool with_bias,
                                              const Conv2dGeometry& g) = 0;
  // A convolution as a layer runs it. The forward also returns, in `kept`, what its backward may
  // read in place of x (the CPU's bf16 path: x already rounded to bf16 in the primitive's format,
  // so it is rounded once a step, not twice; undefined where a backend keeps nothing). The
  // backward computes both passes (dx only when need_dx) and may share work between them (the
  // CPU's bf16 path rounds dy once for both primitives); `into` as for linear layers (only its
  // scaled destination is used: the CPU's bf16 path writes it from the weight gradient's reorder
  // out of the primitive's format).
  virtual Tensor conv2d_forward_keeping(const Tensor& x, const Tensor& w, const Tensor* b, const Conv2dGeometry& g,
                                        Tensor& kept) {
    kept = Tensor();
    return conv2d_forward(x, w, b, g);
  }
  virtual ConvGrads conv2d_backward(const Tensor& dy, const Tensor& x, const Tensor& /*kept*/, const Tensor& w,
                                    bool need_dx, bool with_bias, const Conv2dGeometry& g,
                                    const WeightGradInto& /*into*/) {
    ConvGrads out;
    if (need_dx) out.dx = conv2d_backward_data(dy, w, x.shape(), x.layout(), g);
    out.weights = conv2d_backward_weights(dy, x, w.shape(), with_bias, g);
    return out;
  }

  // --- pooling: x [N, C, H, W] ---
  virtual PoolForward pool2d_forward(const Tensor& x, PoolKind kind, const Pool2dGeometry& g) = 0;
  virtual Tensor pool2d_backward(const Tensor& dy, const Tensor& x, const PoolForward& fwd, PoolKind kind,
                                 const Pool2dGeometry& g) = 0;

  // --- batch normalisation over (N, H, W) per channel: x [N, C, H, W] or [N, C] ---
  virtual BatchNormForward batch_norm_forward_training(const Tensor& x, const Tensor& gamma, const Tensor& beta,
                                                       double eps) = 0;
  virtual Tensor batch_norm_forward_inference(const Tensor& x, const Tensor& gamma, const Tensor& beta,
                                              const Tensor& mean, const Tensor& var, double eps) = 0;
  virtual BatchNormGrads batch_norm_backward(const Tensor& dy, const Tensor& x, const Tensor& gamma, const Tensor& mean,
                                             const Tensor& var, double eps) = 0;

  // --- softmax cross-entropy, mean over the batch: logits [N, K] (plain), labels i32 [N] ---
  // Against the smoothed target q = (1 - s) onehot(label) + s / K (label smoothing, Szegedy et al.
  // 2016; s = 0: plain cross-entropy): loss = mean_n sum_k -q_k log softmax(z)_k
  //   = mean_n [(1 - s)(-log p_label) + s (log sum exp z - mean_k z)].
  // Returns the loss as a one-element tensor; `probs` receives softmax(logits).
  virtual Tensor softmax_cross_entropy_forward(const Tensor& logits, const Tensor& labels, double smoothing,
                                               Tensor& probs) = 0;
  // d loss / d logits = (probs - q) * dloss / N
  virtual Tensor softmax_cross_entropy_backward(const Tensor& probs, const Tensor& labels, double smoothing,
                                                double dloss) = 0;
  virtual std::int64_t count_correct(const Tensor& logits, const Tensor& labels) = 0;

  // --- optimizer updates, in place (w, state and g share shape and layout) ---
  // g' = g + wd*w;  v = mu*v - lr*g';  w += v          (Nesterov: w += mu*v - lr*g')
  virtual void sgd_update(Tensor& w, const Tensor& g, Tensor& v, const SgdHyper& h) = 0;
  // g' = g + wd*w;  s = alpha*s + (1-alpha)*g'^2;  w -= lr * g' / (sqrt(s) + eps)
  virtual void rmsprop_update(Tensor& w, const Tensor& g, Tensor& s, const RmspropHyper& h) = 0;
  // Kingma & Ba: m = b1*m + (1-b1)*g'; v = b2*v + (1-b2)*g'^2; w -= lr * m^ / (sqrt(v^) + eps)
  virtual void adam_update(Tensor& w, const Tensor& g, Tensor& m, Tensor& v, const AdamHyper& h) = 0;
};

Backend& reference_backend();
Backend& dispatch(const Tensor& t);
Backend& dispatch(Device device, DType dtype);
// Whether `t` is defined, plain f32 on the CPU and of `shape`: the form a gradient bucket's slot
// has, and so what a gradient written into one must be.
bool plain_f32_cpu_of_shape(const Tensor& t, const Shape& shape);
// Checks that `into` can receive a weight gradient of `shape` (plain_f32_cpu_of_shape).
void check_weight_destination(const Tensor& into, const Shape& shape);
// The same for a scaled destination (WeightGradInto::scaled): plain 16-bit on the CPU, of `shape`.
void check_scaled_weight_destination(const Tensor& into, const Shape& shape);
// The layout the fast CPU kernels hand a 4-D f32 activation of `channels` in (a convolution's
// output): channel-blocked in the blocking of this CPU's oneDNN kernels where the channels fill
// the blocks (nChw16c with AVX-512, nChw8c without), else plain.
Layout cpu_activation_layout(std::int64_t channels);
// A bf16 activation (a bf16 convolution's, batch norm's or ReLU's output) or gradient widened to
// f32, for kernels that read only f32 (the loss, elementwise products, ghost and synchronised
// batch norm); any other tensor as it is.
Tensor f32_operand(const Tensor& t);
// Registers the backend for a device type (the CPU fast backend registers itself).
void register_backend(DeviceType type, Backend* backend);

// While alive, CPU kernels on this thread run on the reference backend.
class ReferenceKernelsScope {
 public:
  ReferenceKernelsScope();
  ~ReferenceKernelsScope();
  ReferenceKernelsScope(const ReferenceKernelsScope&) = delete;
  ReferenceKernelsScope& operator=(const ReferenceKernelsScope&) = delete;

 private:
  bool previous_;
};

}  // namespace dtrain
