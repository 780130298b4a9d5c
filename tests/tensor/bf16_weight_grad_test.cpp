// dtrain's bf16 weight-gradient kernel (kernels/cpu/conv_weight_grad_bf16.h) against the reference: the
// reference backend's f32 kernel on bf16-rounded x and dy. Both multiply bf16 values exactly in f32 and
// sum in f32, so they differ only by the order of the sums: relative 1e-4 of the largest gradient. The
// shapes take every path of the kernel: odd output widths (a last pair with one output), padding on
// either axis, strides 1-3, kernel widths 3-7, 1, 2 or 4 output blocks a tile, fewer images than threads,
// several chunks of images a thread; x and dy in f32 or bf16, x kept from the forward or not. Skipped
// where the kernel does not run (no AVX512_BF16 in the build or the CPU, or AMX: oneDNN's then).
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "core/threads.h"
#include "tensor/backend.h"
#include "tensor/bf16_test_util.h"
#include "tensor/kernels/cpu/compute_precision.h"
#include "tensor/kernels/cpu/conv_weight_grad_bf16.h"
#include "tensor/kernels/cpu/cpu_backend.h"
#include "tensor/kernels/geometry.h"
#include "tensor/tensor.h"

namespace dtrain {
namespace {

struct GradCase {
  std::int64_t N, C, H, W, O, KH, KW;
  Conv2dGeometry g;
};

using testing::relative_gap;
using testing::uniform_f32;

using testing::OmpThreadsScope;

TEST(Bf16WeightGrad, EqualsTheReferenceOnEveryShapeItTakes) {
  if (!cpu::bf16_weight_grad_available()) GTEST_SKIP() << "the kernel does not run on this machine";
  const std::vector<GradCase> cases = {
      {3, 16, 9, 7, 16, 3, 3, {1, 1, 1, 1}},    // output width 7: the last pair has one output
      {2, 32, 11, 10, 48, 3, 3, {2, 2, 1, 1}},  // stride 2, 3 output blocks: one block a tile
      {5, 16, 8, 8, 64, 3, 3, {2, 2, 1, 1}},    // stride 2, 4 output blocks a tile
      {2, 16, 12, 12, 32, 5, 5, {1, 1, 2, 2}},  // LeNet's width, 2 blocks a tile
      {1, 16, 6, 6, 16, 7, 7, {1, 1, 3, 3}},    // one image, fewer than the threads
      {2, 16, 10, 10, 32, 3, 3, {3, 3, 0, 0}},  // stride 3, no padding
      {4, 64, 8, 8, 64, 3, 3, {1, 1, 1, 1}},    // ResNet-20's last stage
      {2, 16, 9, 8, 16, 5, 3, {2, 1, 2, 1}},    // unequal axes
      {19, 16, 6, 6, 16, 3, 3, {1, 1, 1, 1}},   // 19 images: chunks of 8 carry their sums on
      {2, 16, 8, 8, 64, 5, 5, {1, 1, 2, 2}},    // 5 wide, 4 blocks a tile
      {2, 16, 9, 9, 32, 7, 7, {1, 1, 3, 3}},    // 7 wide, 2 blocks a tile
      {2, 16, 8, 8, 16, 5, 5, {1, 1, 2, 2}},    // 5 wide, 1 block a tile
  };
  std::mt19937 rng(11);
  Backend& fast = cpu_backend();
  Backend& ref = reference_backend();
  for (const GradCase& c : cases) {
    const Shape xs{c.N, c.C, c.H, c.W}, ws{c.O, c.C, c.KH, c.KW};
    const ConvDims d = conv_dims(xs, ws, c.g);
    const Tensor x = uniform_f32(xs, rng), w = uniform_f32(ws, rng), dy = uniform_f32({c.N, c.O, d.OH, d.OW}, rng);
    const WeightGrads want = ref.conv2d_backward_weights(round_to_bf16(dy), round_to_bf16(x), ws, true, c.g);
    const std::string what = fmt::format("N{} C{} {}x{} O{} k{}x{} s{}x{} p{}x{}", c.N, c.C, c.H, c.W, c.O, c.KH, c.KW,
                                         c.g.stride_h, c.g.stride_w, c.g.pad_h, c.g.pad_w);
    ASSERT_TRUE(cpu::bf16_weight_grad_applies(d)) << what;  // the kernel runs, not oneDNN's
    ASSERT_EQ(cpu_activation_layout(c.C), Layout::kNChw16c) << what;
    for (int threads : {1, 2, 3}) {
      const OmpThreadsScope scope(threads);
      WeightGrads got;
      ConvGrads into_slot, from_bf16, from_kept;
      Tensor slot = Tensor::zeros(ws, DType::kBF16);
      {
        const ComputePrecisionScope bf16(ComputePrecision::kBF16);
        got = fast.conv2d_backward_weights(dy, x, ws, true, c.g);
        into_slot = fast.conv2d_backward(dy, x, Tensor(), w, false, true, c.g, {nullptr, &slot, 0.25f});
        // x and dy as a bf16 step hands them over (bf16, blocked), and x kept from the forward.
        const Tensor x16 = x.to_layout(cpu_activation_layout(c.C)).to(DType::kBF16);
        const Tensor dy16 = dy.to_layout(cpu_activation_layout(c.O)).to(DType::kBF16);
        from_bf16 = fast.conv2d_backward(dy16, x16, Tensor(), w, false, true, c.g, {});
        Tensor kept;
        (void)fast.conv2d_forward_keeping(x, w, nullptr, c.g, kept);
        from_kept = fast.conv2d_backward(dy, x, kept, w, false, true, c.g, {});
      }
      EXPECT_EQ(from_bf16.weights.dw.to_vector(), got.dw.to_vector()) << what << ": bf16 inputs, the same bits";
      EXPECT_EQ(from_kept.weights.dw.to_vector(), got.dw.to_vector()) << what << ": kept x, the same bits";
      EXPECT_LE(relative_gap(got.dw, want.dw), 1e-4) << what << ", " << threads << " threads";
      EXPECT_LE(relative_gap(got.db, want.db), 1e-4) << what << ", " << threads << " threads";
      // Not f32 in disguise: rounding x and dy moves dW by far more than the order of the sums.
      EXPECT_GT(relative_gap(got.dw, ref.conv2d_backward_weights(dy, x, ws, true, c.g).dw), 1e-4) << what;
      // The scaled bf16 destination gets 0.25 dW rounded to nearest even, from the same sums.
      const std::vector<float> dw = got.dw.to_vector();
      const auto* bits = static_cast<const std::uint16_t*>(slot.raw_data());
      std::size_t differ = 0;
      for (std::size_t i = 0; i < dw.size(); ++i) differ += bits[i] != f32_to_bf16(0.25f * dw[i]) ? 1 : 0;
      EXPECT_EQ(differ, 0u) << what << ", " << threads << " threads";
      EXPECT_EQ(into_slot.weights.db.to_vector(), got.db.to_vector()) << what;
    }
  }
}

TEST(Bf16WeightGrad, TakesThe3To7WideKernelsOf16ChannelMultiplesAndCanBeSwitchedOff) {
  if (!cpu::bf16_weight_grad_available()) GTEST_SKIP() << "the kernel does not run on this machine";
  const Conv2dGeometry same{1, 1, 1, 1};
  const Shape xs{2, 32, 8, 8}, ws{16, 32, 3, 3};
  EXPECT_TRUE(cpu::bf16_weight_grad_applies(conv_dims(xs, ws, same)));
  EXPECT_FALSE(cpu::bf16_weight_grad_applies(conv_dims({2, 3, 8, 8}, {16, 3, 3, 3}, same)));            // a stem
  EXPECT_FALSE(cpu::bf16_weight_grad_applies(conv_dims({2, 16, 8, 8}, {24, 16, 3, 3}, same)));          // 24 outputs
  EXPECT_FALSE(cpu::bf16_weight_grad_applies(conv_dims({2, 16, 8, 8}, {32, 16, 1, 1}, {2, 2, 0, 0})));  // 1x1
  // Off, the layer runs oneDNN's kernel (its own cache entry), and on again this one's bits.
  std::mt19937 rng(3);
  const Tensor x = uniform_f32(xs, rng), dy = uniform_f32({2, 16, 8, 8}, rng);
  const WeightGrads want =
      reference_backend().conv2d_backward_weights(round_to_bf16(dy), round_to_bf16(x), ws, true, same);
  const ComputePrecisionScope bf16(ComputePrecision::kBF16);
  const WeightGrads on = cpu_backend().conv2d_backward_weights(dy, x, ws, true, same);
  cpu::set_bf16_weight_grad_kernel(false);
  EXPECT_FALSE(cpu::bf16_weight_grad_applies(conv_dims(xs, ws, same)));
  const WeightGrads off = cpu_backend().conv2d_backward_weights(dy, x, ws, true, same);
  cpu::set_bf16_weight_grad_kernel(true);
  const WeightGrads again = cpu_backend().conv2d_backward_weights(dy, x, ws, true, same);
  EXPECT_LE(relative_gap(off.dw, want.dw), 1e-4);
  EXPECT_EQ(again.dw.to_vector(), on.dw.to_vector());
}

// A NaN in dy reaches the gradients of its output channel (the trainer's finite check sees it), and
// only those: the zero padding around x and past a row's last output adds nothing.
TEST(Bf16WeightGrad, ANanInTheOutputGradientReachesOnlyItsChannel) {
  if (!cpu::bf16_weight_grad_available()) GTEST_SKIP() << "the kernel does not run on this machine";
  std::mt19937 rng(5);
  const Conv2dGeometry g{1, 1, 1, 1};
  const Shape xs{2, 16, 5, 5}, ws{32, 16, 3, 3};
  const Tensor x = uniform_f32(xs, rng);
  std::vector<float> dyv = uniform_f32({2, 32, 5, 5}, rng).to_vector();
  dyv[(1 * 32 + 17) * 25 + 12] = std::nanf("");  // image 1, channel 17, the centre
  const Tensor dy = Tensor::from_vector(dyv, Shape{2, 32, 5, 5});
  WeightGrads got;
  {
    const ComputePrecisionScope bf16(ComputePrecision::kBF16);
    got = cpu_backend().conv2d_backward_weights(dy, x, ws, true, g);
  }
  const std::vector<float> dw = got.dw.to_vector(), db = got.db.to_vector();
  for (std::int64_t o = 0; o < 32; ++o) {
    bool any_nan = false;
    for (std::int64_t k = 0; k < 16 * 9; ++k)
      any_nan = any_nan || std::isnan(dw[static_cast<std::size_t>(o * 144 + k)]);
    EXPECT_EQ(any_nan, o == 17) << "channel " << o;
    EXPECT_EQ(std::isnan(db[static_cast<std::size_t>(o)]), o == 17) << "channel " << o;
  }
}

// An odd output width leaves the last pair one output short; the input column beyond the last window
// (read by no window) must not reach the gradient, so an infinity there leaves dW finite, as the
// reference has it.
TEST(Bf16WeightGrad, AColumnNoWindowReadsLeavesTheGradientFinite) {
  if (!cpu::bf16_weight_grad_available()) GTEST_SKIP() << "the kernel does not run on this machine";
  std::mt19937 rng(9);
  const Conv2dGeometry g{2, 2, 0, 0};  // width 8, kernel 3, stride 2: outputs read columns 0-6
  const Shape xs{1, 16, 8, 8}, ws{16, 16, 3, 3};
  std::vector<float> xv = uniform_f32(xs, rng).to_vector();
  for (std::int64_t c = 0; c < 16; ++c)
    for (std::int64_t h = 0; h < 8; ++h) xv[static_cast<std::size_t>((c * 8 + h) * 8 + 7)] = INFINITY;
  const Tensor x = Tensor::from_vector(xv, xs), dy = uniform_f32({1, 16, 3, 3}, rng);
  WeightGrads got;
  {
    const ComputePrecisionScope bf16(ComputePrecision::kBF16);
    got = cpu_backend().conv2d_backward_weights(dy, x, ws, false, g);
  }
  for (const float v : got.dw.to_vector()) ASSERT_TRUE(std::isfinite(v));
  EXPECT_LE(
      relative_gap(got.dw,
                   reference_backend().conv2d_backward_weights(round_to_bf16(dy), round_to_bf16(x), ws, false, g).dw),
      1e-4);
}

}  // namespace
}  // namespace dtrain
