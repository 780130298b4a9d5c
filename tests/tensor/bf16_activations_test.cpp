// Activations kept in bf16 between layers (Backend::relu_forward_activation): in bf16 compute
// precision a ReLU writes its output rounded to bf16, and the kernels that read it (convolution,
// linear, pooling, ReLU, addition) must compute from it exactly what they compute from the same
// values in f32, since their bf16 primitives round their inputs to bf16 anyway. So every check
// below is bit equality against the f32 path on the widened values, except average pooling, whose
// bf16 output is the f32 average rounded once. Skipped on CPUs without bf16 dot products.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <limits>
#include <random>

#include "autograd/ops/conv.h"
#include "autograd/ops/elementwise.h"
#include "autograd/ops/linear.h"
#include "autograd/ops/loss.h"
#include "autograd/ops/norm.h"
#include "autograd/ops/pool.h"
#include "autograd/ops/shape.h"
#include "autograd/variable.h"
#include "tensor/allocator.h"
#include "tensor/backend.h"
#include "tensor/kernels/cpu/compute_precision.h"
#include "tensor/kernels/cpu/cpu_backend.h"
#include "tensor/tensor.h"

namespace dtrain::bf16_activations_test {
namespace {

Tensor random_tensor(const Shape& shape, std::mt19937& rng, Layout layout = Layout::kPlain) {
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  std::vector<float> v(static_cast<std::size_t>(shape.numel()));
  for (float& x : v) x = dist(rng);
  return Tensor::from_vector(v, shape).to_layout(layout);
}

void expect_same_bits(const Tensor& got, const Tensor& want, const std::string& what) {
  ASSERT_EQ(got.shape(), want.shape()) << what;
  const std::vector<float> a = got.to_vector(), b = want.to_vector();
  std::size_t differing = 0;
  for (std::size_t i = 0; i < a.size(); ++i)
    differing += std::bit_cast<std::uint32_t>(a[i]) != std::bit_cast<std::uint32_t>(b[i]) ? 1 : 0;
  EXPECT_EQ(differing, 0u) << what << ": " << differing << " of " << a.size() << " elements differ";
}

struct InBf16 : ComputePrecisionScope {
  InBf16() : ComputePrecisionScope(ComputePrecision::kBF16) {}
};

TEST(Bf16Activations, ReluWritesTheRoundedReluAndItsBackwardMasksAsInF32) {
  if (!cpu_has_bf16()) GTEST_SKIP() << "this CPU has no bf16 dot products";
  Backend& fast = cpu_backend();
  std::mt19937 rng(3);
  for (const Layout layout : {Layout::kPlain, cpu_activation_layout(32)}) {
    Tensor x = random_tensor({2, 32, 5, 5}, rng).to_plain();
    // Edge values: a tie that rounds to even, NaN, infinities, both zeros.
    const float tie = std::bit_cast<float>(0x3f808000u);  // halfway between two bf16: rounds down to even
    const float specials[] = {tie,
                              std::numeric_limits<float>::quiet_NaN(),
                              std::numeric_limits<float>::infinity(),
                              -std::numeric_limits<float>::infinity(),
                              0.0f,
                              -0.0f};
    for (std::size_t i = 0; i < std::size(specials); ++i) x.data<float>()[i] = specials[i];
    x = x.to_layout(layout);
    const Tensor dy = random_tensor(x.shape(), rng, layout);
    Tensor y, dx;
    {
      const InBf16 bf16;
      y = fast.relu_forward_activation(x);
      dx = fast.relu_backward(y, dy);
    }
    EXPECT_EQ(y.dtype(), DType::kBF16);
    EXPECT_EQ(y.layout(), layout);
    EXPECT_EQ(dx.dtype(), DType::kF32);
    const Tensor y_ref = reference_backend().relu_forward(x);
    expect_same_bits(y, round_to_bf16(y_ref), "relu forward");
    expect_same_bits(dx, reference_backend().relu_backward(y_ref, dy), "relu backward");
    EXPECT_EQ(y.to_plain().to(DType::kF32).data<float>()[0], 1.0f);  // the tie went to the even neighbour
  }
  // A bf16 y that is no ReLU's output (negative values, NaN) masks as y > 0 does in f32.
  Tensor mixed = random_tensor({64}, rng);
  mixed.data<float>()[0] = std::numeric_limits<float>::quiet_NaN();
  const Tensor mixed16 = mixed.to(DType::kBF16), g = random_tensor({64}, rng);
  expect_same_bits(fast.relu_backward(mixed16, g), reference_backend().relu_backward(mixed16.to(DType::kF32), g),
                   "relu backward of any bf16 y");
  // Outside bf16 the activation stays f32.
  EXPECT_EQ(fast.relu_forward_activation(random_tensor({4, 4}, rng)).dtype(), DType::kF32);
}

// A bf16 activation and its widened f32 copy: what a consumer must treat alike.
struct Activation {
  Tensor bf16, f32;
};
Activation activation(const Shape& shape, std::mt19937& rng, Layout layout) {
  const InBf16 bf16;
  Activation a;
  a.bf16 = cpu_backend().relu_forward_activation(random_tensor(shape, rng, layout));
  a.f32 = a.bf16.to(DType::kF32);
  return a;
}

TEST(Bf16Activations, ConvolutionsReadABf16InputAsTheyReadItsF32Value) {
  if (!cpu_has_bf16()) GTEST_SKIP() << "this CPU has no bf16 dot products";
  Backend& fast = cpu_backend();
  std::mt19937 rng(5);
  // A blocked input (a ResNet block's) and a plain one (lenet's 6-channel second layer).
  for (const std::int64_t channels : {16, 6}) {
    const Activation x = activation({4, channels, 12, 12}, rng, cpu_activation_layout(channels));
    const Tensor w = random_tensor({16, channels, 3, 3}, rng), b = random_tensor({16}, rng);
    const Conv2dGeometry g{1, 1, 1, 1};
    const Tensor dy = random_tensor({4, 16, 12, 12}, rng, cpu_activation_layout(16));
    const std::string what = fmt::format("{} channels", channels);
    {
      const InBf16 bf16;
      Tensor kept16, kept32;
      expect_same_bits(fast.conv2d_forward_keeping(x.bf16, w, &b, g, kept16),
                       fast.conv2d_forward_keeping(x.f32, w, &b, g, kept32), what + " forward");
      const ConvGrads from16 = fast.conv2d_backward(dy, x.bf16, kept16, w, true, true, g, {});
      const ConvGrads from32 = fast.conv2d_backward(dy, x.f32, kept32, w, true, true, g, {});
      expect_same_bits(from16.dx, from32.dx, what + " backward data");
      expect_same_bits(from16.weights.dw, from32.weights.dw, what + " backward weights");
      expect_same_bits(fast.conv2d_backward_weights(dy, x.bf16, w.shape(), true, g).dw, from32.weights.dw,
                       what + " backward weights alone");
    }
    // In f32, the bf16 value is widened and computed on as f32.
    expect_same_bits(fast.conv2d_forward(x.bf16, w, &b, g), fast.conv2d_forward(x.f32, w, &b, g), what + " f32");
  }
}

TEST(Bf16Activations, LinearLayersReadABf16InputAsTheyReadItsF32Value) {
  if (!cpu_has_bf16()) GTEST_SKIP() << "this CPU has no bf16 dot products";
  Backend& fast = cpu_backend();
  std::mt19937 rng(9);
  const Activation x = activation({8, 40}, rng, Layout::kPlain);
  const Tensor w = random_tensor({12, 40}, rng), b = random_tensor({12}, rng), dy = random_tensor({8, 12}, rng);
  {
    const InBf16 bf16;
    expect_same_bits(fast.linear_forward(x.bf16, w, &b), fast.linear_forward(x.f32, w, &b), "forward");
    const WeightGrads g16 = fast.linear_backward_weights(dy, x.bf16, true, {});
    const WeightGrads g32 = fast.linear_backward_weights(dy, x.f32, true, {});
    expect_same_bits(g16.dw, g32.dw, "backward weights");
    expect_same_bits(g16.db, g32.db, "backward bias");
  }
  expect_same_bits(fast.linear_forward(x.bf16, w, &b), fast.linear_forward(x.f32, w, &b), "f32 forward");
}

// The weight rounded once (linear_weight_operand), which forward reads and the graph keeps for
// backward-data, gives the bits the f32 weight gives, from f32 and bf16 inputs; outside bf16
// precision the weight is itself.
TEST(Bf16Activations, ALinearWeightRoundedOnceGivesTheBitsOfTheF32Weight) {
  if (!cpu_has_bf16()) GTEST_SKIP() << "this CPU has no bf16 dot products";
  Backend& fast = cpu_backend();
  std::mt19937 rng(19);
  const Activation x = activation({8, 40}, rng, Layout::kPlain);
  const Tensor w = random_tensor({12, 40}, rng), b = random_tensor({12}, rng), dy = random_tensor({8, 12}, rng);
  EXPECT_TRUE(fast.linear_weight_operand(w).shares_storage_with(w));
  const InBf16 bf16;
  const Tensor w16 = fast.linear_weight_operand(w);
  ASSERT_EQ(w16.dtype(), DType::kBF16);
  expect_same_bits(w16, round_to_bf16(w), "the rounded weight");
  for (const Tensor& in : {x.bf16, x.f32}) {
    expect_same_bits(fast.linear_forward(in, w16, &b), fast.linear_forward(in, w, &b), "forward");
  }
  expect_same_bits(fast.linear_backward_data(dy, w16), fast.linear_backward_data(dy, w), "backward data");
}

// Pooling a bf16 activation writes bf16 forward: the maximum (one of the inputs) or the f32
// average rounded once. Max pooling in windows that do not overlap writes bf16 backward too: the
// f32 path's dx rounded to bf16, from an f32 dy or the same dy rounded (each dx element is one dy
// element). Averages and overlapping windows keep an f32 backward, with the f32 path's bits.
TEST(Bf16Activations, MaxPoolingInSeparateWindowsKeepsBf16BothWays) {
  if (!cpu_has_bf16()) GTEST_SKIP() << "this CPU has no bf16 dot products";
  Backend& fast = cpu_backend();
  std::mt19937 rng(11);
  Pool2dGeometry overlapping;  // ResNet-50's: 3x3, stride 2, padding 1
  overlapping.kernel_h = overlapping.kernel_w = 3;
  overlapping.pad_h = overlapping.pad_w = 1;
  for (const std::int64_t channels : {16, 6}) {
    const Activation x = activation({2, channels, 8, 8}, rng, cpu_activation_layout(channels));
    for (const Pool2dGeometry& g : {Pool2dGeometry{}, overlapping}) {
      const bool overlap = g.kernel_h == 3;
      const Tensor dy = random_tensor({2, channels, 4, 4}, rng, x.f32.layout());
      for (const PoolKind kind : {PoolKind::kMax, PoolKind::kAvg}) {
        const std::string what =
            fmt::format("{} pooling, {} channels, {} windows", kind == PoolKind::kMax ? "max" : "average", channels,
                        overlap ? "overlapping" : "separate");
        const PoolForward f32 = fast.pool2d_forward(x.f32, kind, g);
        const Tensor dx32 = fast.pool2d_backward(dy, x.f32, f32, kind, g);
        const InBf16 bf16;
        const PoolForward f16 = fast.pool2d_forward(x.bf16, kind, g);
        EXPECT_EQ(f16.y.dtype(), DType::kBF16) << what;
        expect_same_bits(f16.y, kind == PoolKind::kMax ? f32.y : round_to_bf16(f32.y), what + " forward");
        const Tensor dx = fast.pool2d_backward(dy, x.bf16, f16, kind, g);
        const bool routed = kind == PoolKind::kMax && !overlap;
        EXPECT_EQ(dx.dtype(), routed ? DType::kBF16 : DType::kF32) << what;
        EXPECT_EQ(dx.layout(), x.bf16.layout()) << what;
        expect_same_bits(dx, routed ? round_to_bf16(dx32) : dx32, what + " backward");
        if (!routed) continue;
        const Tensor dx_of_bf16 = fast.pool2d_backward(dy.to(DType::kBF16), x.bf16, f16, kind, g);
        EXPECT_EQ(dx_of_bf16.dtype(), DType::kBF16) << what;
        expect_same_bits(dx_of_bf16, dx, what + " backward of a bf16 dy");
      }
    }
  }
}

TEST(Bf16Activations, AddingABf16ActivationToAnF32OneGivesTheF32SumOfTheWidenedValues) {
  if (!cpu_has_bf16()) GTEST_SKIP() << "this CPU has no bf16 dot products";
  std::mt19937 rng(13);
  const Layout blocked = cpu_activation_layout(16);
  const Activation a = activation({2, 16, 4, 4}, rng, blocked);
  const Tensor b = random_tensor({2, 16, 4, 4}, rng, blocked);
  const Tensor want = cpu_backend().add(b, a.f32);
  for (const Tensor& got : {cpu_backend().add(b, a.bf16), cpu_backend().add(a.bf16, b)}) {
    EXPECT_EQ(got.dtype(), DType::kF32);
    expect_same_bits(got, want, "mixed add");
  }
}

// A residual addition of two bf16 activations in bf16 writes the f32 sum rounded once to bf16,
// so a ReLU after it gives the bits it gives on the f32 sum; in f32 precision the sum is f32.
TEST(Bf16Activations, AddingTwoBf16ActivationsRoundsTheSumOnceAndTheReluAfterItIsUnchanged) {
  if (!cpu_has_bf16()) GTEST_SKIP() << "this CPU has no bf16 dot products";
  Backend& fast = cpu_backend();
  std::mt19937 rng(17);
  const Layout blocked = cpu_activation_layout(16);
  Activation a = activation({2, 16, 4, 4}, rng, blocked), b = activation({2, 16, 4, 4}, rng, blocked);
  {  // a batch norm's output: negative values too
    const InBf16 bf16;
    b.bf16 = random_tensor({2, 16, 4, 4}, rng, blocked).to(DType::kBF16);
    b.f32 = b.bf16.to(DType::kF32);
  }
  const Tensor sum32 = fast.add(a.f32, b.f32);
  Tensor sum, relu_of_sum;
  {
    const InBf16 bf16;
    sum = fast.add_activation(a.bf16, b.bf16);
    relu_of_sum = fast.relu_forward_activation(sum);
    EXPECT_EQ(sum.dtype(), DType::kBF16);
    EXPECT_EQ(sum.layout(), blocked);
    expect_same_bits(relu_of_sum, fast.relu_forward_activation(sum32), "relu after the bf16 sum");
  }
  expect_same_bits(sum, round_to_bf16(sum32), "bf16 sum");
  EXPECT_EQ(fast.add_activation(a.bf16, b.bf16).dtype(), DType::kF32);  // outside bf16 precision
  // A bf16 gradient through a bf16 ReLU stays bf16, with the bits of the f32 mask.
  const Tensor dy = random_tensor({2, 16, 4, 4}, rng, blocked).to(DType::kBF16);
  const Tensor dx = fast.relu_backward(relu_of_sum, dy);
  EXPECT_EQ(dx.dtype(), DType::kBF16);
  expect_same_bits(dx, fast.relu_backward(relu_of_sum, dy.to(DType::kF32)), "relu backward of a bf16 dy");
}

// A conv -> batch norm -> ReLU -> conv -> ReLU -> pool -> linear -> loss chain, the shape of lenet
// and of a ResNet block, through autograd: in bf16 its convolutions', batch norm's and ReLUs'
// outputs are bf16, every parameter's gradient is f32 and close to the f32 run's, and the tensors the graph keeps for
// backward take fewer bytes than in f32 (where before they took more: the convolutions kept a bf16 copy of an f32
// input).
struct ChainRun {
  std::vector<Tensor> grads;
  std::vector<DType> hidden_dtypes;  // the first convolution's, batch norm's and ReLU's outputs
  std::size_t graph_bytes = 0;  // allocator bytes in use while the graph is alive, above the start
};

ChainRun run_chain(const std::vector<Tensor>& params, const Tensor& input, const Tensor& labels) {
  std::vector<Variable> p;
  p.reserve(params.size());
  for (const Tensor& t : params) p.emplace_back(t.clone(), true);
  const std::size_t before = cpu_allocator_stats().bytes_in_use;
  ChainRun run;
  {
    ops::BatchNormState bn;
    bn.track_running_stats = false;
    const Conv2dGeometry same{1, 1, 1, 1};
    const Variable c = ops::conv2d(Variable(input), p[0], Variable(), same);
    const Variable n = ops::batch_norm(c, p[1], p[2], bn, true);
    Variable h = ops::relu(n);
    run.hidden_dtypes = {c.data().dtype(), n.data().dtype(), h.data().dtype()};
    h = ops::relu(ops::conv2d(h, p[3], Variable(), same));
    h = ops::max_pool2d(h, Pool2dGeometry{});
    Variable loss = ops::softmax_cross_entropy(ops::linear(ops::flatten(h), p[4], p[5]), labels, 0.0);
    run.graph_bytes = cpu_allocator_stats().bytes_in_use - before;
    loss.backward();
  }
  for (const Variable& v : p) run.grads.push_back(v.grad().to_plain());
  return run;
}

TEST(Bf16Activations, AChainKeepsItsReluOutputsInBf16WithF32GradientsAndFewerBytes) {
  if (!cpu_has_bf16()) GTEST_SKIP() << "this CPU has no bf16 dot products";
  std::mt19937 rng(17);
  const std::int64_t N = 16, C = 16, HW = 16;
  const std::vector<Tensor> params = {random_tensor({C, 3, 3, 3}, rng),
                                      random_tensor({C}, rng),
                                      random_tensor({C}, rng),
                                      random_tensor({C, C, 3, 3}, rng),
                                      random_tensor({10, C * HW * HW / 4}, rng),
                                      random_tensor({10}, rng)};
  const Tensor input = random_tensor({N, 3, HW, HW}, rng);
  std::vector<float> label_values(N);
  for (std::int64_t i = 0; i < N; ++i) label_values[static_cast<std::size_t>(i)] = static_cast<float>(i % 10);
  const Tensor labels = Tensor::from_vector(label_values, {N}, DType::kI32);
  const ChainRun f32 = run_chain(params, input, labels);
  ChainRun bf16;
  {
    const InBf16 in_bf16;
    bf16 = run_chain(params, input, labels);
  }
  EXPECT_EQ(f32.hidden_dtypes, std::vector<DType>(3, DType::kF32));
  EXPECT_EQ(bf16.hidden_dtypes, std::vector<DType>(3, DType::kBF16));
  EXPECT_LT(bf16.graph_bytes, f32.graph_bytes * 9 / 10) << "f32 " << f32.graph_bytes << " bf16 " << bf16.graph_bytes;
  for (std::size_t i = 0; i < params.size(); ++i) {
    EXPECT_EQ(bf16.grads[i].dtype(), DType::kF32);
    // bf16 compute itself moves these gradients from f32's by up to 0.076 of the largest (the first
    // convolution's, behind batch norm's backward, which subtracts two projections of dy): that
    // much with f32 activations, 0.098 with bf16 ReLU outputs, where max pooling's ties among
    // values that round alike can pick another element of a window, and 0.152 with the
    // convolutions' outputs in bf16 too (0.152 with batch norm itself in f32 or bf16: the rounding
    // of its input moves it; the other parameters' stay within 0.034).
    const std::vector<float> a = bf16.grads[i].to_vector(), b = f32.grads[i].to_vector();
    double gap = 0, scale = 1e-30;
    for (std::size_t k = 0; k < a.size(); ++k) {
      gap = std::max(gap, static_cast<double>(std::abs(a[k] - b[k])));
      scale = std::max(scale, static_cast<double>(std::abs(b[k])));
    }
    EXPECT_LT(gap / scale, 0.2) << "parameter " << i;
  }
}

// A bf16 gradient goes on as it is only to the nodes of bf16 activations (convolution, batch
// norm, ReLU, addition): a bf16 batch norm's dx reaches the bf16 ReLU before it in bf16, its
// masked gradient reaches the leaf widened to f32, the values unchanged; a node of an f32 output
// (here a scaling) receives it widened.
TEST(Bf16Activations, ABf16GradientReachesTheBf16NodesAsItIsAndEveryOtherNodeInF32) {
  if (!cpu_has_bf16()) GTEST_SKIP() << "this CPU has no bf16 dot products";
  std::mt19937 rng(23);
  const InBf16 in_bf16;
  ops::BatchNormState bn;
  bn.track_running_stats = false;
  const Variable gamma(random_tensor({16}, rng), true), beta(random_tensor({16}, rng), true);
  Variable x(random_tensor({4, 16, 6, 6}, rng).to(DType::kBF16), true);
  const Variable r = ops::relu(x);
  Variable n = ops::batch_norm(r, gamma, beta, bn, true);
  const Variable sum = ops::add(r, n);
  ASSERT_EQ(n.data().dtype(), DType::kBF16);
  ASSERT_EQ(sum.data().dtype(), DType::kBF16);
  EXPECT_TRUE(r.grad_fn()->reads_bf16_gradient);
  EXPECT_TRUE(n.grad_fn()->reads_bf16_gradient);
  EXPECT_TRUE(sum.grad_fn()->reads_bf16_gradient);
  const Variable scaled = ops::scale(x, 2.0);
  EXPECT_EQ(scaled.data().dtype(), DType::kF32);
  EXPECT_FALSE(scaled.grad_fn()->reads_bf16_gradient);
  // The gradient batch norm's node hands back: its kernels on the same tensors.
  const BatchNormForward f =
      dispatch(r.data()).batch_norm_forward_training(r.data(), gamma.data(), beta.data(), bn.eps);
  const Tensor dy = random_tensor({4, 16, 6, 6}, rng);
  const Tensor seen = dispatch(dy).batch_norm_backward(dy, r.data(), gamma.data(), f.mean, f.var, bn.eps).dx;
  EXPECT_EQ(seen.dtype(), DType::kBF16);
  n.backward(dy);
  EXPECT_EQ(x.grad().dtype(), DType::kF32);
  // relu_backward on the bf16 dx: the mask of x > 0 over the values batch norm computed.
  const std::vector<float> got = x.grad().to_vector(), d = seen.to_vector(), xv = x.data().to_vector();
  for (std::size_t i = 0; i < got.size(); ++i) EXPECT_EQ(got[i], xv[i] > 0 ? d[i] : 0.0f) << i;
}

}  // namespace
}  // namespace dtrain::bf16_activations_test
