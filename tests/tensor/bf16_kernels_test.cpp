// Convolutions, linear layers and batch norm in bf16 (kernels/cpu/compute_precision.h) against their
// reference: the reference backend's f32 kernel on bf16-rounded inputs. oneDNN's bf16 kernels multiply bf16 values
// (each product exact in f32) and accumulate in f32, so the two differ only by the order of the f32 sums: relative 1e-4
// of the largest output. An output written in bf16 (a convolution's forward, batch norm's y and dx) is compared with
// the reference rounded to bf16, within one bf16 step (2^-7) of the largest, as the two f32 values may round apart.
// Each result must also differ from the f32 kernel's on the unrounded inputs by more than the order of sums would
// explain, so a bf16 run that silently computed in f32 fails. Skipped on CPUs without bf16 dot products.
#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <random>

#include "core/error.h"
#include "tensor/backend.h"
#include "tensor/bf16_test_util.h"
#include "tensor/kernels/cpu/compute_precision.h"
#include "tensor/kernels/cpu/cpu_backend.h"
#include "tensor/tensor.h"

namespace dtrain {
namespace {

struct Bf16Case {
  std::int64_t N, C, H, W, O, K, stride, pad;
};

using testing::OmpThreadsScope;
using testing::relative_gap;
using testing::uniform_f32;

constexpr double kBf16Step = 1.0 / 128;  // 2^-7: one bf16 step of a value in [1, 2)

// Sets bf16 for one scope.
struct InBf16 : ComputePrecisionScope {
  InBf16() : ComputePrecisionScope(ComputePrecision::kBF16) {}
};

TEST(Bf16Conv, EveryPassEqualsTheReferenceOnBf16RoundedInputs) {
  if (!cpu_has_bf16()) GTEST_SKIP() << "this CPU has no bf16 dot products";
  const std::vector<Bf16Case> cases = {{4, 1, 28, 28, 32, 5, 1, 2},   // lenet's first layer
                                       {4, 32, 14, 14, 64, 5, 1, 2},  // and its second
                                       {2, 3, 16, 16, 16, 3, 1, 1},   // a CIFAR ResNet's stem
                                       {2, 16, 16, 16, 16, 3, 1, 1},  // its blocks
                                       {2, 16, 16, 16, 32, 3, 2, 1}};
  std::mt19937 rng(7);
  Backend& fast = cpu_backend();
  Backend& ref = reference_backend();
  for (const Bf16Case& c : cases) {
    const Conv2dGeometry g{c.stride, c.stride, c.pad, c.pad};
    const std::int64_t OH = (c.H + 2 * c.pad - c.K) / c.stride + 1, OW = (c.W + 2 * c.pad - c.K) / c.stride + 1;
    const Shape xs{c.N, c.C, c.H, c.W}, ws{c.O, c.C, c.K, c.K};
    const Tensor x = uniform_f32(xs, rng), w = uniform_f32(ws, rng), b = uniform_f32({c.O}, rng);
    const Tensor dy = uniform_f32({c.N, c.O, OH, OW}, rng);
    Tensor y, y_keeping, dx;
    WeightGrads grads;
    ConvGrads both, from_bf16_dy, into_slot;
    {
      const InBf16 bf16;
      y = fast.conv2d_forward(x, w, &b, g);
      Tensor kept;
      y_keeping = fast.conv2d_forward_keeping(x, w, &b, g, kept);
      EXPECT_TRUE(kept.defined());  // x rounded to bf16 once, for forward and backward-weights
      dx = fast.conv2d_backward_data(dy, w, xs, Layout::kPlain, g);
      grads = fast.conv2d_backward_weights(dy, x, ws, true, g);
      both = fast.conv2d_backward(dy, x, kept, w, true, true, g, {});
      // A bf16 dy (a bf16 batch norm's dx) is read as the f32 dy it rounds from.
      from_bf16_dy = fast.conv2d_backward(dy.to(DType::kBF16), x, kept, w, true, true, g, {});
      // A bf16 scaled destination (a bf16 wire slot) receives 0.3 dW rounded, the rest as before.
      Tensor slot = Tensor::zeros(ws, DType::kBF16);
      into_slot = fast.conv2d_backward(dy, x, kept, w, true, true, g, {nullptr, &slot, 0.3f});
      EXPECT_EQ(into_slot.weights.dw.raw_data(), slot.raw_data());
    }
    {
      ASSERT_EQ(into_slot.weights.dw.dtype(), DType::kBF16);
      const auto* got = static_cast<const std::uint16_t*>(into_slot.weights.dw.raw_data());
      const std::vector<float> dw = both.weights.dw.to_vector();
      std::size_t differ = 0;
      for (std::size_t i = 0; i < dw.size(); ++i) differ += got[i] != f32_to_bf16(0.3f * dw[i]) ? 1 : 0;
      EXPECT_EQ(differ, 0u) << "scale, then round to nearest even";
      EXPECT_EQ(into_slot.dx.to_vector_f64(), both.dx.to_vector_f64());
      EXPECT_EQ(into_slot.weights.db.to_vector_f64(), both.weights.db.to_vector_f64());
      // In f32 precision the destination is left alone.
      Tensor untouched = Tensor::zeros(ws, DType::kBF16);
      const ConvGrads f32 = fast.conv2d_backward(dy, x, Tensor(), w, false, false, g, {nullptr, &untouched, 0.3f});
      EXPECT_EQ(f32.weights.dw.dtype(), DType::kF32);
      EXPECT_EQ(untouched.to_vector(), std::vector<float>(static_cast<std::size_t>(ws.numel()), 0.0f));
    }
    EXPECT_EQ(y.dtype(), DType::kBF16) << "the forward writes bf16";
    EXPECT_EQ(from_bf16_dy.dx.to_vector_f64(), both.dx.to_vector_f64());
    EXPECT_EQ(from_bf16_dy.weights.dw.to_vector_f64(), both.weights.dw.to_vector_f64());
    const std::string what = fmt::format("N{} C{} {}x{} O{} k{} s{}", c.N, c.C, c.H, c.W, c.O, c.K, c.stride);
    // The layer's path (x rounded once for forward and backward-weights, dy once for both backward
    // passes) gives the separate passes' bits.
    EXPECT_EQ(y_keeping.to_vector_f64(), y.to_vector_f64()) << what;
    EXPECT_EQ(both.dx.to_vector_f64(), dx.to_vector_f64()) << what;
    EXPECT_EQ(both.weights.dw.to_vector_f64(), grads.dw.to_vector_f64()) << what;
    EXPECT_EQ(both.weights.db.to_vector_f64(), grads.db.to_vector_f64()) << what;
    const Tensor xr = round_to_bf16(x), wr = round_to_bf16(w), dyr = round_to_bf16(dy);
    EXPECT_LE(relative_gap(y, round_to_bf16(ref.conv2d_forward(xr, wr, &b, g))), kBf16Step) << what << " forward";
    EXPECT_LE(relative_gap(dx, ref.conv2d_backward_data(dyr, wr, xs, Layout::kPlain, g)), 1e-4) << what << " data";
    const WeightGrads want = ref.conv2d_backward_weights(dyr, xr, ws, true, g);
    EXPECT_LE(relative_gap(grads.dw, want.dw), 1e-4) << what << " weights";
    EXPECT_LE(relative_gap(grads.db, want.db), 1e-4) << what << " bias";
    EXPECT_EQ(grads.dw.dtype(), DType::kF32) << what;  // master-weight gradients stay f32
    // Not f32 in disguise: bf16 rounding moves the outputs by far more than summation order does.
    EXPECT_GT(relative_gap(y, ref.conv2d_forward(x, w, &b, g)), 1e-4) << what;
  }
}

TEST(Bf16Linear, EveryPassEqualsTheReferenceOnBf16RoundedInputs) {
  if (!cpu_has_bf16()) GTEST_SKIP() << "this CPU has no bf16 dot products";
  std::mt19937 rng(8);
  Backend& fast = cpu_backend();
  Backend& ref = reference_backend();
  // mlp's layers, lenet's classifier, and odd sizes; on one thread, and on three, where the wide products of at
  // most 64 rows run in one block of columns per thread (gemm_bf16.cpp), the last one narrower or wider (784, 300
  // and 193 outputs: 272, 272, 240; 112, 112, 76; 64, 64, 65).
  for (const auto& [threads, n, in, out] : std::vector<std::array<std::int64_t, 4>>{{1, 64, 784, 512},
                                                                                    {1, 64, 512, 10},
                                                                                    {1, 32, 3136, 1024},
                                                                                    {1, 7, 33, 5},
                                                                                    {1, 1, 16, 3},
                                                                                    {3, 64, 784, 512},
                                                                                    {3, 64, 1000, 300},
                                                                                    {3, 64, 1000, 193},
                                                                                    {3, 7, 33, 5}}) {
    const OmpThreadsScope on(static_cast<int>(threads));
    const Tensor x = uniform_f32({n, in}, rng), w = uniform_f32({out, in}, rng), b = uniform_f32({out}, rng);
    const Tensor dy = uniform_f32({n, out}, rng);
    Tensor y, y_keeping, dx;
    WeightGrads grads;
    ConvGrads both;
    {
      const InBf16 bf16;
      y = fast.linear_forward(x, w, &b);
      dx = fast.linear_backward_data(dy, w);
      grads = fast.linear_backward_weights(dy, x, true, {});
    }
    const std::string what = fmt::format("linear {} x {} -> {} on {} thread(s)", n, in, out, threads);
    const Tensor xr = round_to_bf16(x), wr = round_to_bf16(w), dyr = round_to_bf16(dy);
    EXPECT_LE(relative_gap(y, ref.linear_forward(xr, wr, &b)), 1e-4) << what << " forward";
    EXPECT_LE(relative_gap(dx, ref.linear_backward_data(dyr, wr)), 1e-4) << what << " data";
    const WeightGrads want = ref.linear_backward_weights(dyr, xr, true, {});
    EXPECT_LE(relative_gap(grads.dw, want.dw), 1e-4) << what << " weights";
    // The bias gradient sums dy in f32 (no product to round), as autocast leaves reductions.
    EXPECT_LE(relative_gap(grads.db, ref.linear_backward_weights(dy, x, true, {}).db), 1e-5) << what << " bias";
    EXPECT_GT(relative_gap(y, ref.linear_forward(x, w, &b)), 1e-4) << what;
  }
}

// A bf16 scaled destination (a bf16 wire slot) receives scale * dw rounded to the nearest bf16, the
// bits of rounding the f32 dw of the same matmul, and is returned as dw; outside bf16 precision, or
// for an f16 destination, the backend writes f32 as before and leaves it untouched.
// On three threads, [48, 256] x [256, 4096] runs in one block of columns per thread (gemm_bf16.cpp).
TEST(Bf16Linear, AScaledBf16DestinationReceivesTheWeightGradientRoundedAsItLeavesTheMatmul) {
  if (!cpu_has_bf16()) GTEST_SKIP() << "this CPU has no bf16 dot products";
  std::mt19937 rng(12);
  Backend& fast = cpu_backend();
  for (const auto& [threads, n, in, out] : std::vector<std::array<std::int64_t, 4>>{
           {1, 64, 3136, 1024}, {1, 256, 784, 512}, {1, 7, 33, 5}, {1, 1, 16, 3}, {3, 256, 4096, 48}}) {
    const OmpThreadsScope on(static_cast<int>(threads));
    const Tensor x = uniform_f32({n, in}, rng), dy = uniform_f32({n, out}, rng);
    const std::string what = fmt::format("linear {} x {} -> {} on {} thread(s)", n, in, out, threads);
    for (const float scale : {0.5f, 0.3f}) {
      Tensor slot = Tensor::zeros({out, in}, DType::kBF16);
      WeightGrads f32, scaled;
      {
        const InBf16 bf16;
        f32 = fast.linear_backward_weights(dy, x, true, {});
        scaled = fast.linear_backward_weights(dy, x, true, {nullptr, &slot, scale});
      }
      ASSERT_EQ(scaled.dw.raw_data(), slot.raw_data()) << what << ": written into the destination";
      ASSERT_EQ(scaled.dw.dtype(), DType::kBF16) << what;
      const auto* got = static_cast<const std::uint16_t*>(slot.raw_data());
      const float* dw = f32.dw.data<float>();
      std::int64_t differ = 0;
      for (std::int64_t i = 0; i < slot.numel(); ++i) differ += got[i] != f32_to_bf16(scale * dw[i]) ? 1 : 0;
      EXPECT_EQ(differ, 0) << what << " scale " << scale;
      EXPECT_EQ(scaled.db.to_vector(), f32.db.to_vector()) << what << ": the bias gradient stays f32";
    }
    // f32 precision, and an f16 destination in bf16 precision: not written.
    Tensor slot16 = Tensor::zeros({out, in}, DType::kBF16), half = Tensor::zeros({out, in}, DType::kF16);
    const WeightGrads plain = fast.linear_backward_weights(dy, x, false, {nullptr, &slot16, 0.5f});
    EXPECT_EQ(plain.dw.dtype(), DType::kF32) << what;
    EXPECT_EQ(slot16.to_vector(), std::vector<float>(static_cast<std::size_t>(out * in), 0.0f)) << what;
    {
      const InBf16 bf16;
      Tensor f32_slot = Tensor::zeros({out, in});
      const WeightGrads into_f32 = fast.linear_backward_weights(dy, x, false, {&f32_slot, &half, 0.5f});
      EXPECT_EQ(into_f32.dw.raw_data(), f32_slot.raw_data()) << what << ": the f32 destination instead";
      EXPECT_EQ(half.to_vector(), std::vector<float>(static_cast<std::size_t>(out * in), 0.0f)) << what;
      Tensor wrong = Tensor::zeros({out + 1, in}, DType::kBF16);
      EXPECT_THROW(fast.linear_backward_weights(dy, x, false, {nullptr, &wrong, 0.5f}), InternalError) << what;
    }
  }
}

// Batch norm on a bf16 x (a bf16 convolution's output) in bf16 precision: y and dx in bf16,
// statistics and parameter gradients in f32, all equal to the f32 reference on x's values and dy
// rounded to bf16.
TEST(Bf16BatchNorm, TrainingOnABf16InputEqualsTheReferenceOnItsValues) {
  if (!cpu_has_bf16()) GTEST_SKIP() << "this CPU has no bf16 dot products";
  std::mt19937 rng(9);
  Backend& fast = cpu_backend();
  Backend& ref = reference_backend();
  constexpr double eps = 1e-5;
  // A ResNet block's channels in the blocked layout, a plain 3-channel input and [N, C].
  for (const auto& [xs, layout] : std::vector<std::pair<Shape, Layout>>{{Shape{4, 16, 8, 8}, Layout::kNChw16c},
                                                                        {Shape{2, 3, 5, 5}, Layout::kPlain},
                                                                        {Shape{8, 32}, Layout::kPlain}}) {
    const std::string what = fmt::format("{}", xs);
    const Tensor x32 = uniform_f32(xs, rng), dy = uniform_f32(xs, rng);
    const Tensor gamma = uniform_f32({xs[1]}, rng), beta = uniform_f32({xs[1]}, rng);
    const Tensor x16 = x32.to(DType::kBF16).to_layout(layout);
    const Tensor xv = x16.to_plain().to(DType::kF32);  // the values the bf16 kernels read
    BatchNormForward f;
    BatchNormGrads g;
    {
      const InBf16 bf16;
      f = fast.batch_norm_forward_training(x16, gamma, beta, eps);
      g = fast.batch_norm_backward(dy.to_layout(layout), x16, gamma, f.mean, f.var, eps);
    }
    EXPECT_EQ(f.y.dtype(), DType::kBF16) << what;
    EXPECT_EQ(f.mean.dtype(), DType::kF32) << what;
    EXPECT_EQ(g.dx.dtype(), DType::kBF16) << what;
    EXPECT_EQ(g.dgamma.dtype(), DType::kF32) << what;
    const BatchNormForward want = ref.batch_norm_forward_training(xv, gamma, beta, eps);
    EXPECT_LE(relative_gap(f.mean, want.mean), 1e-4) << what << " mean";
    EXPECT_LE(relative_gap(f.var, want.var), 1e-4) << what << " variance";
    EXPECT_LE(relative_gap(f.y.to_plain(), round_to_bf16(want.y)), kBf16Step) << what << " y";
    const BatchNormGrads want_g = ref.batch_norm_backward(round_to_bf16(dy), xv, gamma, want.mean, want.var, eps);
    EXPECT_LE(relative_gap(g.dx.to_plain(), round_to_bf16(want_g.dx)), kBf16Step) << what << " dx";
    EXPECT_LE(relative_gap(g.dgamma, want_g.dgamma), 1e-4) << what << " dgamma";
    EXPECT_LE(relative_gap(g.dbeta, want_g.dbeta), 1e-4) << what << " dbeta";
    EXPECT_GT(relative_gap(f.y.to_plain(), ref.batch_norm_forward_training(x32, gamma, beta, eps).y), 1e-4) << what;
    // In f32 precision a bf16 input is widened: the f32 kernels, f32 outputs.
    const BatchNormForward widened = fast.batch_norm_forward_training(x16, gamma, beta, eps);
    EXPECT_EQ(widened.y.dtype(), DType::kF32) << what;
    EXPECT_LE(relative_gap(widened.y.to_plain(), want.y), 1e-5) << what;
    EXPECT_EQ(fast.batch_norm_backward(dy, x16, gamma, f.mean, f.var, eps).dx.dtype(), DType::kF32) << what;
  }
}

TEST(Bf16Conv, RoundingIsToNearestEvenAndThePrecisionNameIsChecked) {
  const Tensor t = Tensor::from_vector(std::vector<float>{1.0f, 1.00390625f, 1.01171875f, -3.0f}, Shape{4});
  // 1 + 2^-8 is halfway between 1 and 1 + 2^-7: ties to the even 1; 1 + 3 * 2^-8 rounds up to 1 + 2^-6.
  EXPECT_EQ(round_to_bf16(t).to_vector(), (std::vector<float>{1.0f, 1.0f, 1.015625f, -3.0f}));
  EXPECT_EQ(parse_compute_precision("bf16"), ComputePrecision::kBF16);
  try {
    parse_compute_precision("fp16");
    FAIL() << "no error";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("unknown precision 'fp16'; valid: f32, bf16"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace dtrain
