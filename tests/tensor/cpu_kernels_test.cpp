// The fast CPU backend against the reference backend (the ground truth), on random inputs over
// shapes that exercise every layout, channel counts below, at and above the 8- and 16-channel blocks,
// strides, paddings, kernel sizes, odd spatial extents and batch sizes 1 and more.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <dnnl.hpp>
#include <limits>
#include <numeric>
#include <random>
#include <thread>

#include "tensor/backend.h"
#include "tensor/kernels/cpu/cpu_backend.h"
#include "tensor/kernels/cpu/gemm.h"
#include "tensor/tensor.h"

namespace dtrain {
namespace {

Backend& fast() { return cpu_backend(); }
Backend& ref() { return reference_backend(); }

Tensor random_tensor(const Shape& shape, std::mt19937& rng, Layout layout = Layout::kPlain, float lo = -1.0f,
                     float hi = 1.0f) {
  std::uniform_real_distribution<float> dist(lo, hi);
  std::vector<float> v(static_cast<std::size_t>(shape.numel()));
  for (float& x : v) x = dist(rng);
  return Tensor::from_vector(v, shape).to_layout(layout);
}

// Distinct values (a shuffled ramp), so max pooling has no ties.
Tensor distinct_tensor(const Shape& shape, std::mt19937& rng, Layout layout = Layout::kPlain) {
  std::vector<float> v(static_cast<std::size_t>(shape.numel()));
  std::iota(v.begin(), v.end(), 0.0f);
  std::shuffle(v.begin(), v.end(), rng);
  for (float& x : v) x = x / static_cast<float>(v.size()) - 0.5f;
  return Tensor::from_vector(v, shape).to_layout(layout);
}

// |got - want| <= rtol * max|want| elementwise (logical order, any layouts).
void expect_close(const Tensor& got, const Tensor& want, double rtol, const std::string& what) {
  ASSERT_TRUE(got.defined()) << what;
  ASSERT_EQ(got.shape(), want.shape()) << what;
  const std::vector<double> a = got.to_vector_f64(), b = want.to_vector_f64();
  double scale = 0;
  for (double x : b) scale = std::max(scale, std::abs(x));
  const double tol = rtol * std::max(scale, 1e-30);
  std::size_t worst = 0;
  double worst_err = -1;
  for (std::size_t i = 0; i < a.size(); ++i) {
    const double err = std::isnan(a[i]) ? std::numeric_limits<double>::infinity() : std::abs(a[i] - b[i]);
    if (err > worst_err) {
      worst_err = err;
      worst = i;
    }
  }
  if (!a.empty()) {
    EXPECT_LE(worst_err, tol) << what << ": element " << worst << " is " << a[worst] << ", reference " << b[worst]
                              << " (scale " << scale << ")";
  }
}

std::string layout_str(Layout l) { return layout_name(l); }

// ---------------------------------------------------------------- convolution

struct ConvCase {
  std::int64_t N, C, H, W, O, K, stride, pad;
};

const std::vector<ConvCase>& conv_cases() {
  static const std::vector<ConvCase> cases = {
      {1, 1, 7, 7, 16, 3, 1, 1},     // first layer, 1 channel -> blocked output
      {2, 3, 9, 9, 16, 3, 2, 1},     // 3 channels, stride 2
      {2, 3, 11, 11, 10, 5, 1, 2},   // plain in and out, 5x5
      {3, 10, 7, 9, 32, 3, 2, 0},    // 10 channels, no padding, odd extents
      {2, 16, 8, 8, 16, 3, 1, 1},    // ResNet stage 1
      {2, 16, 9, 9, 32, 1, 2, 0},    // 1x1 stride-2 shortcut
      {2, 16, 10, 10, 32, 3, 2, 1},  // stride-2 3x3
      {1, 32, 7, 7, 64, 5, 1, 2},    // LeNet-like 5x5 pad 2, batch 1
      {2, 64, 5, 5, 64, 3, 1, 1},    // 64 channels
      {2, 32, 6, 6, 10, 3, 1, 1},    // blocked in, plain out
      {1, 16, 5, 7, 16, 5, 2, 2},    // 5x5 stride 2 on 5x7
      {2, 32, 7, 7, 48, 1, 1, 0},    // 1x1 stride 1
      {2, 8, 6, 6, 24, 3, 1, 1},     // blocks of 8 only (nChw8c without AVX-512, plain with it)
  };
  return cases;
}

// Every layout an input of `channels` can arrive in: plain, and each blocking the channels fill
// (the kernels reorder a blocking other than this CPU's to it).
std::vector<Layout> layouts_for(std::int64_t channels) {
  std::vector<Layout> out{Layout::kPlain};
  for (Layout l : {Layout::kNChw16c, Layout::kNChw8c}) {
    if (channels % layout_block(l) == 0) out.push_back(l);
  }
  return out;
}

constexpr double kConvTol = 1e-4;

// The blocking follows oneDNN's effective ISA (tests.cmake runs this binary again with
// ONEDNN_MAX_CPU_ISA=AVX2, so the nChw8c path is tested on AVX-512 machines too).
TEST(CpuLayout, BlockingFollowsTheCpu) {
  const auto isa = static_cast<unsigned>(dnnl::get_effective_cpu_isa());
  const auto avx512 = static_cast<unsigned>(dnnl_cpu_isa_avx512_core);
  const Layout blocked = (isa & avx512) == avx512 ? Layout::kNChw16c : Layout::kNChw8c;
  EXPECT_EQ(cpu_activation_layout(64), blocked);
  EXPECT_EQ(cpu_activation_layout(24), blocked == Layout::kNChw8c ? Layout::kNChw8c : Layout::kPlain);
  EXPECT_EQ(cpu_activation_layout(10), Layout::kPlain);
  const char* forced = std::getenv("ONEDNN_MAX_CPU_ISA");
  if (forced != nullptr && std::string(forced) == "AVX2") {
    EXPECT_EQ(blocked, Layout::kNChw8c);
  }
}

TEST(CpuConv, ForwardMatchesReference) {
  std::mt19937 rng(1);
  for (const ConvCase& c : conv_cases()) {
    const Conv2dGeometry g{c.stride, c.stride, c.pad, c.pad};
    const Tensor w = random_tensor({c.O, c.C, c.K, c.K}, rng);
    const Tensor b = random_tensor({c.O}, rng);
    for (Layout xl : layouts_for(c.C)) {
      const Tensor x = random_tensor({c.N, c.C, c.H, c.W}, rng, xl);
      for (bool with_bias : {false, true}) {
        const std::string what = fmt::format("conv fwd N{} C{} {}x{} O{} k{} s{} p{} x {} bias {}", c.N, c.C, c.H, c.W,
                                             c.O, c.K, c.stride, c.pad, layout_str(xl), with_bias);
        const Tensor y = fast().conv2d_forward(x, w, with_bias ? &b : nullptr, g);
        EXPECT_EQ(y.layout(), cpu_activation_layout(c.O)) << what;
        expect_close(y, ref().conv2d_forward(x, w, with_bias ? &b : nullptr, g), kConvTol, what);
      }
    }
  }
}

TEST(CpuConv, BackwardDataMatchesReference) {
  std::mt19937 rng(2);
  for (const ConvCase& c : conv_cases()) {
    const Conv2dGeometry g{c.stride, c.stride, c.pad, c.pad};
    const std::int64_t OH = (c.H + 2 * c.pad - c.K) / c.stride + 1, OW = (c.W + 2 * c.pad - c.K) / c.stride + 1;
    const Tensor w = random_tensor({c.O, c.C, c.K, c.K}, rng);
    for (Layout dyl : layouts_for(c.O)) {
      const Tensor dy = random_tensor({c.N, c.O, OH, OW}, rng, dyl);
      for (Layout xl : layouts_for(c.C)) {
        const std::string what = fmt::format("conv bwd data N{} C{} {}x{} O{} k{} s{} p{} dy {} dx {}", c.N, c.C, c.H,
                                             c.W, c.O, c.K, c.stride, c.pad, layout_str(dyl), layout_str(xl));
        const Shape xs{c.N, c.C, c.H, c.W};
        const Tensor dx = fast().conv2d_backward_data(dy, w, xs, xl, g);
        EXPECT_EQ(dx.layout(), xl) << what;
        expect_close(dx, ref().conv2d_backward_data(dy, w, xs, Layout::kPlain, g), kConvTol, what);
      }
    }
  }
}

TEST(CpuConv, BackwardWeightsMatchesReference) {
  std::mt19937 rng(3);
  for (const ConvCase& c : conv_cases()) {
    const Conv2dGeometry g{c.stride, c.stride, c.pad, c.pad};
    const std::int64_t OH = (c.H + 2 * c.pad - c.K) / c.stride + 1, OW = (c.W + 2 * c.pad - c.K) / c.stride + 1;
    const Shape ws{c.O, c.C, c.K, c.K};
    for (Layout xl : layouts_for(c.C)) {
      const Tensor x = random_tensor({c.N, c.C, c.H, c.W}, rng, xl);
      for (Layout dyl : layouts_for(c.O)) {
        const Tensor dy = random_tensor({c.N, c.O, OH, OW}, rng, dyl);
        for (bool with_bias : {false, true}) {
          const std::string what =
              fmt::format("conv bwd weights N{} C{} {}x{} O{} k{} s{} p{} x {} dy {} bias {}", c.N, c.C, c.H, c.W, c.O,
                          c.K, c.stride, c.pad, layout_str(xl), layout_str(dyl), with_bias);
          const WeightGrads got = fast().conv2d_backward_weights(dy, x, ws, with_bias, g);
          const WeightGrads want = ref().conv2d_backward_weights(dy, x, ws, with_bias, g);
          EXPECT_EQ(got.dw.layout(), Layout::kPlain) << what;
          expect_close(got.dw, want.dw, kConvTol, what + " dw");
          EXPECT_EQ(got.db.defined(), with_bias) << what;
          if (with_bias) expect_close(got.db, want.db, kConvTol, what + " db");
        }
      }
    }
  }
}

TEST(CpuConv, PrimitivesAreCachedAcrossCalls) {
  std::mt19937 rng(4);
  const Tensor x = random_tensor({2, 16, 6, 6}, rng, Layout::kNChw16c);
  const Tensor w = random_tensor({16, 16, 3, 3}, rng);
  const Conv2dGeometry g{1, 1, 1, 1};
  const Tensor y1 = fast().conv2d_forward(x, w, nullptr, g);
  const std::size_t misses = cpu_primitive_cache_misses();
  const Tensor y2 = fast().conv2d_forward(x, w, nullptr, g);
  EXPECT_EQ(cpu_primitive_cache_misses(), misses);
  EXPECT_EQ(y1.to_vector(), y2.to_vector());
  // A different geometry builds a new primitive.
  (void)fast().conv2d_forward(x, w, nullptr, Conv2dGeometry{2, 2, 1, 1});
  EXPECT_EQ(cpu_primitive_cache_misses(), misses + 1);
}

TEST(CpuConv, ConcurrentCallsFromSeveralThreadsAgree) {
  std::mt19937 rng(5);
  const Tensor x = random_tensor({4, 32, 9, 9}, rng, Layout::kNChw16c);
  const Tensor w = random_tensor({32, 32, 3, 3}, rng);
  const Conv2dGeometry g{1, 1, 1, 1};
  const std::vector<float> expected = fast().conv2d_forward(x, w, nullptr, g).to_vector();
  const std::vector<float> expected_dw = fast().conv2d_backward_weights(x, x, w.shape(), false, g).dw.to_vector();
  std::vector<int> ok(4, 0);
  std::vector<std::thread> threads;
  threads.reserve(4);
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      bool good = true;
      for (int i = 0; i < 20; ++i) {
        good = good && fast().conv2d_forward(x, w, nullptr, g).to_vector() == expected;
        good = good && fast().conv2d_backward_weights(x, x, w.shape(), false, g).dw.to_vector() == expected_dw;
      }
      ok[static_cast<std::size_t>(t)] = good ? 1 : 0;
    });
  }
  for (auto& th : threads) th.join();
  for (int t = 0; t < 4; ++t) EXPECT_EQ(ok[static_cast<std::size_t>(t)], 1) << "thread " << t;
}

TEST(CpuConv, OtherDTypesFallBackToReference) {
  std::mt19937 rng(6);
  const Tensor x = random_tensor({1, 3, 5, 5}, rng).to(DType::kF64);
  const Tensor w = random_tensor({4, 3, 3, 3}, rng).to(DType::kF64);
  const Tensor y = fast().conv2d_forward(x, w, nullptr, {});
  EXPECT_EQ(y.dtype(), DType::kF64);
  expect_close(y, ref().conv2d_forward(x, w, nullptr, {}), 1e-12, "f64 conv");
}

TEST(CpuConv, RejectsMismatchedShapes) {
  const Tensor x = Tensor::zeros({1, 3, 5, 5});
  const Tensor w = Tensor::zeros({4, 2, 3, 3});
  EXPECT_THROW((void)fast().conv2d_forward(x, w, nullptr, {}), ShapeError);
  const Tensor w7 = Tensor::zeros({4, 3, 7, 7});
  EXPECT_THROW((void)fast().conv2d_forward(x, w7, nullptr, {}), ShapeError);
}

// ---------------------------------------------------------------- pooling

struct PoolCase {
  std::int64_t N, C, H, W, K, stride, pad;
};

TEST(CpuPool, ForwardAndBackwardMatchReference) {
  const std::vector<PoolCase> cases = {
      {2, 3, 8, 8, 2, 2, 0},  {1, 16, 7, 7, 2, 2, 0},   {2, 16, 9, 11, 3, 2, 1},
      {2, 32, 6, 6, 3, 1, 1}, {1, 10, 5, 5, 3, 1, 0},   {3, 64, 8, 8, 8, 8, 0},
      {2, 32, 7, 7, 7, 1, 0}, {2, 16, 13, 13, 5, 3, 2}, {2, 24, 6, 6, 2, 2, 0},
  };
  std::mt19937 rng(7);
  for (const PoolCase& c : cases) {
    const Pool2dGeometry g{c.K, c.K, c.stride, c.stride, c.pad, c.pad};
    for (Layout xl : layouts_for(c.C)) {
      for (PoolKind kind : {PoolKind::kMax, PoolKind::kAvg}) {
        const std::string what =
            fmt::format("{} pool N{} C{} {}x{} k{} s{} p{} {}", kind == PoolKind::kMax ? "max" : "avg", c.N, c.C, c.H,
                        c.W, c.K, c.stride, c.pad, layout_str(xl));
        const Tensor x = distinct_tensor({c.N, c.C, c.H, c.W}, rng, xl);
        const PoolForward got = fast().pool2d_forward(x, kind, g);
        const PoolForward want = ref().pool2d_forward(x, kind, g);
        EXPECT_EQ(got.y.layout(), xl) << what;
        expect_close(got.y, want.y, 1e-6, what + " forward");
        const Tensor dy = random_tensor(want.y.shape(), rng, xl);
        const Tensor dx = fast().pool2d_backward(dy, x, got, kind, g);
        EXPECT_EQ(dx.layout(), xl) << what;
        expect_close(dx, ref().pool2d_backward(dy, x, want, kind, g), 1e-6, what + " backward");
        // Each backend recomputes the forward pass when handed the other's workspace.
        expect_close(fast().pool2d_backward(dy, x, want, kind, g), dx, 1e-6, what + " backward, reference workspace");
        expect_close(ref().pool2d_backward(dy, x, got, kind, g), dx, 1e-6,
                     what + " reference backward, fast workspace");
      }
    }
  }
}

// ---------------------------------------------------------------- batch norm

TEST(CpuBatchNorm, TrainingInferenceAndBackwardMatchReference) {
  const std::vector<Shape> shapes = {{4, 3, 5, 5},  {2, 16, 7, 7}, {1, 32, 6, 5}, {8, 64, 3, 3},
                                     {2, 24, 4, 4}, {16, 10},      {5, 32}};
  std::mt19937 rng(8);
  const double eps = 1e-5;
  for (const Shape& s : shapes) {
    const std::int64_t C = s[1];
    const Tensor gamma = random_tensor({C}, rng, Layout::kPlain, 0.5f, 1.5f);
    const Tensor beta = random_tensor({C}, rng);
    for (Layout xl : s.rank() == 4 ? layouts_for(C) : std::vector<Layout>{Layout::kPlain}) {
      const std::string what = fmt::format("batch norm {} {}", s, layout_str(xl));
      const Tensor x = random_tensor(s, rng, xl, -1.0f, 3.0f);  // mean far from 0
      const BatchNormForward got = fast().batch_norm_forward_training(x, gamma, beta, eps);
      const BatchNormForward want = ref().batch_norm_forward_training(x, gamma, beta, eps);
      EXPECT_EQ(got.y.layout(), xl) << what;
      expect_close(got.y, want.y, 1e-4, what + " y");
      expect_close(got.mean, want.mean, 1e-5, what + " mean");
      expect_close(got.var, want.var, 1e-4, what + " var");

      const Tensor run_mean = random_tensor({C}, rng);
      const Tensor run_var = random_tensor({C}, rng, Layout::kPlain, 0.5f, 2.0f);
      const Tensor yi = fast().batch_norm_forward_inference(x, gamma, beta, run_mean, run_var, eps);
      EXPECT_EQ(yi.layout(), xl) << what;
      expect_close(yi, ref().batch_norm_forward_inference(x, gamma, beta, run_mean, run_var, eps), 1e-5,
                   what + " inference");

      const Tensor dy = random_tensor(s, rng, xl);
      const BatchNormGrads g = fast().batch_norm_backward(dy, x, gamma, want.mean, want.var, eps);
      const BatchNormGrads r = ref().batch_norm_backward(dy, x, gamma, want.mean, want.var, eps);
      EXPECT_EQ(g.dx.layout(), xl) << what;
      expect_close(g.dx, r.dx, 2e-4, what + " dx");
      expect_close(g.dgamma, r.dgamma, 1e-4, what + " dgamma");
      expect_close(g.dbeta, r.dbeta, 1e-4, what + " dbeta");
    }
  }
}

// ---------------------------------------------------------------- linear

class GemmLibraryScope {
 public:
  explicit GemmLibraryScope(GemmLibrary lib) : previous_(gemm_library()) { set_gemm_library(lib); }
  ~GemmLibraryScope() { set_gemm_library(previous_); }
  GemmLibraryScope(const GemmLibraryScope&) = delete;
  GemmLibraryScope& operator=(const GemmLibraryScope&) = delete;

 private:
  GemmLibrary previous_;
};

TEST(CpuLinear, MatchesReferenceWithBothGemmLibraries) {
  struct Case {
    std::int64_t N, I, O;
  };
  const std::vector<Case> cases = {{1, 1, 1}, {3, 7, 5}, {17, 33, 10}, {64, 784, 64}, {2, 512, 300}};
  std::mt19937 rng(9);
  for (GemmLibrary lib : {GemmLibrary::kOneDnn, GemmLibrary::kOpenBlas}) {
    GemmLibraryScope scope(lib);
    for (const Case& c : cases) {
      const std::string what = fmt::format("linear {} N{} I{} O{}", gemm_library_name(lib), c.N, c.I, c.O);
      const Tensor x = random_tensor({c.N, c.I}, rng);
      const Tensor w = random_tensor({c.O, c.I}, rng);
      const Tensor b = random_tensor({c.O}, rng);
      expect_close(fast().linear_forward(x, w, &b), ref().linear_forward(x, w, &b), 1e-5, what + " forward+bias");
      expect_close(fast().linear_forward(x, w, nullptr), ref().linear_forward(x, w, nullptr), 1e-5, what + " forward");
      const Tensor dy = random_tensor({c.N, c.O}, rng);
      expect_close(fast().linear_backward_data(dy, w), ref().linear_backward_data(dy, w), 1e-5, what + " dx");
      const WeightGrads got = fast().linear_backward_weights(dy, x, true, {});
      const WeightGrads want = ref().linear_backward_weights(dy, x, true, {});
      expect_close(got.dw, want.dw, 1e-5, what + " dw");
      expect_close(got.db, want.db, 1e-5, what + " db");
      EXPECT_FALSE(fast().linear_backward_weights(dy, x, false, {}).db.defined()) << what;
    }
  }
}

TEST(CpuLinear, WeightGradientIsWrittenIntoAGivenTensor) {
  // The destination is a slot in a larger buffer (a gradient bucket), as the buckets give it.
  std::mt19937 rng(10);
  const Tensor x = random_tensor({9, 13}, rng), dy = random_tensor({9, 6}, rng);
  const WeightGrads want = ref().linear_backward_weights(dy, x, true, {});
  for (Backend* be : {&fast(), &ref()}) {
    Tensor bucket = Tensor::full({6 * 13 + 5}, -1.0);
    const Tensor slot = bucket.slice_rows(5, 5 + 6 * 13).reshape({6, 13});
    const WeightGrads got = be->linear_backward_weights(dy, x, true, {&slot});
    EXPECT_EQ(got.dw.raw_data(), slot.raw_data()) << "dw is the given tensor";
    expect_close(slot, want.dw, 1e-5, "dw in the slot");
    expect_close(got.db, want.db, 1e-5, "db");
    EXPECT_EQ(bucket.slice_rows(0, 5).to_vector(), std::vector<float>(5, -1.0f)) << "nothing outside the slot";
    const Tensor wrong = Tensor::zeros({13, 6});
    EXPECT_THROW(be->linear_backward_weights(dy, x, false, {&wrong}), InternalError);
  }
}

TEST(CpuLinear, RejectsMismatchedShapes) {
  EXPECT_THROW((void)fast().linear_forward(Tensor::zeros({2, 3}), Tensor::zeros({4, 5}), nullptr), ShapeError);
}

// ---------------------------------------------------------------- elementwise, reductions

TEST(CpuElementwise, ReluAndMulInBothLayouts) {
  std::mt19937 rng(10);
  for (const Shape& s : {Shape{2, 32, 5, 3}, Shape{7, 13}, Shape{8, 16, 32, 32}}) {
    for (Layout l : layouts_for(s.rank() == 4 ? s[1] : 1)) {
      if (s.rank() != 4 && l != Layout::kPlain) continue;
      const std::string what = fmt::format("{} {}", s, layout_str(l));
      const Tensor x = random_tensor(s, rng, l);
      const Tensor y = fast().relu_forward(x);
      EXPECT_EQ(y.layout(), l) << what;
      expect_close(y, ref().relu_forward(x), 0, what + " relu");
      const Tensor dy = random_tensor(s, rng, l);
      expect_close(fast().relu_backward(y, dy), ref().relu_backward(y, dy), 0, what + " relu backward");
      expect_close(fast().mul(x, dy), ref().mul(x, dy), 0, what + " mul");
      // Operands in different layouts.
      const Tensor dy_plain = dy.to_plain();
      expect_close(fast().relu_backward(y, dy_plain), ref().relu_backward(y, dy), 0, what + " relu backward mixed");
      expect_close(fast().mul(x, dy_plain), ref().mul(x, dy), 0, what + " mul mixed");
    }
  }
}

TEST(CpuElementwise, DropoutMaskIsBitIdentical) {
  for (const Shape& s : {Shape{1}, Shape{3, 7}, Shape{300000}}) {
    for (double keep : {0.5, 0.9, 1.0}) {
      const std::vector<float> a = fast().dropout_mask(s, keep, 1234).to_vector();
      const std::vector<float> b = ref().dropout_mask(s, keep, 1234).to_vector();
      EXPECT_EQ(a, b) << s.str() << " keep " << keep;
    }
  }
  EXPECT_NE(fast().dropout_mask({1000}, 0.5, 1).to_vector(), fast().dropout_mask({1000}, 0.5, 2).to_vector());
}

TEST(CpuElementwise, Reductions) {
  std::mt19937 rng(11);
  for (const Shape& s : {Shape{1}, Shape{1000}, Shape{2, 32, 40, 40}}) {
    const Tensor x = random_tensor(s, rng, Layout::kPlain, -1.0f, 2.0f);
    const double r_sum = ref().sum(x), r_sq = ref().sum_of_squares(x);
    EXPECT_NEAR(fast().sum(x), r_sum, 1e-9 * std::max(1.0, std::abs(r_sum)) * static_cast<double>(x.numel()))
        << s.str();
    EXPECT_NEAR(fast().sum_of_squares(x), r_sq, 1e-9 * r_sq * static_cast<double>(x.numel()) + 1e-12) << s.str();
    if (s.rank() == 4) {
      const Tensor xb = x.to_layout(Layout::kNChw16c);
      EXPECT_NEAR(fast().sum(xb), r_sum, 1e-6 * static_cast<double>(x.numel())) << s.str();
    }
    EXPECT_TRUE(fast().all_finite(x)) << s.str();
    for (float bad : {std::numeric_limits<float>::infinity(), -std::numeric_limits<float>::infinity(),
                      std::numeric_limits<float>::quiet_NaN()}) {
      Tensor y = x.clone();
      y.data<float>()[y.numel() - 1] = bad;
      EXPECT_FALSE(fast().all_finite(y)) << s.str() << " " << bad;
      EXPECT_FALSE(ref().all_finite(y)) << s.str() << " " << bad;
    }
  }
  Tensor big = Tensor::full({4}, 3.0e38);  // finite, near the top of the f32 range
  EXPECT_TRUE(fast().all_finite(big));
}

// ---------------------------------------------------------------- loss

TEST(CpuLoss, SoftmaxCrossEntropyMatchesReference) {
  std::mt19937 rng(12);
  for (const auto& [N, K] : std::vector<std::pair<std::int64_t, std::int64_t>>{{1, 2}, {64, 10}, {300, 1000}}) {
    for (double smoothing : {0.0, 0.1}) {
      const std::string what = fmt::format("N{} K{} smoothing {}", N, K, smoothing);
      Tensor logits = random_tensor({N, K}, rng, Layout::kPlain, -5.0f, 5.0f);
      logits.data<float>()[0] = 80.0f;  // exp overflows in f32 without the max shift
      std::vector<std::int32_t> lab(static_cast<std::size_t>(N));
      for (auto& l : lab) l = static_cast<std::int32_t>(rng() % static_cast<std::uint32_t>(K));
      const Tensor labels = Tensor::from_labels(lab);
      Tensor pf, pr;
      const double lf = fast().softmax_cross_entropy_forward(logits, labels, smoothing, pf).item();
      const double lr = ref().softmax_cross_entropy_forward(logits, labels, smoothing, pr).item();
      EXPECT_TRUE(std::isfinite(lf)) << what;
      EXPECT_NEAR(lf, lr, 1e-5 * std::max(1.0, std::abs(lr))) << what;
      expect_close(pf, pr, 1e-5, what + " probs");
      expect_close(fast().softmax_cross_entropy_backward(pr, labels, smoothing, 0.5),
                   ref().softmax_cross_entropy_backward(pr, labels, smoothing, 0.5), 1e-6, what + " backward");
      EXPECT_EQ(fast().count_correct(logits, labels), ref().count_correct(logits, labels)) << what;
    }
  }
  // Ties: the first maximum wins in both backends.
  const Tensor tied = Tensor::from_vector(std::vector<float>{1, 3, 3, 0, 2, 2, 2, 2}, {2, 4});
  EXPECT_EQ(fast().count_correct(tied, Tensor::from_labels({1, 0})), 2);
  EXPECT_EQ(fast().count_correct(tied, Tensor::from_labels({2, 1})), 0);
  Tensor probs;
  EXPECT_THROW((void)fast().softmax_cross_entropy_forward(tied, Tensor::from_labels({1, 4}), 0.0, probs), ShapeError);
}

// ---------------------------------------------------------------- optimizers

// Max distance in units in the last place between two f32 vectors.
std::int64_t max_ulp(const std::vector<float>& a, const std::vector<float>& b) {
  std::int64_t worst = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    const auto ia = std::bit_cast<std::int32_t>(a[i]), ib = std::bit_cast<std::int32_t>(b[i]);
    const std::int64_t oa = ia < 0 ? -static_cast<std::int64_t>(ia & 0x7fffffff) : ia;
    const std::int64_t ob = ib < 0 ? -static_cast<std::int64_t>(ib & 0x7fffffff) : ib;
    worst = std::max(worst, std::abs(oa - ob));
  }
  return worst;
}

TEST(CpuOptim, UpdatesMatchReferenceToF32Rounding) {
  std::mt19937 rng(13);
  for (std::int64_t n : {std::int64_t{1}, std::int64_t{1000}, std::int64_t{100003}}) {
    const Tensor w0 = random_tensor({n}, rng);
    std::vector<Tensor> grads;
    grads.reserve(3);
    for (int s = 0; s < 3; ++s) grads.push_back(random_tensor({n}, rng));
    for (bool nesterov : {false, true}) {
      Tensor wf = w0.clone(), wr = w0.clone(), vf = Tensor::zeros({n}), vr = Tensor::zeros({n});
      const SgdHyper h{0.1, 0.9, 1e-4, nesterov};
      for (const Tensor& g : grads) {
        fast().sgd_update(wf, g, vf, h);
        ref().sgd_update(wr, g, vr, h);
      }
      EXPECT_LE(max_ulp(wf.to_vector(), wr.to_vector()), 1) << "sgd n " << n << " nesterov " << nesterov;
      EXPECT_LE(max_ulp(vf.to_vector(), vr.to_vector()), 1) << "sgd v n " << n;
      EXPECT_NE(wf.to_vector(), w0.to_vector());
    }
    {
      Tensor wf = w0.clone(), wr = w0.clone(), sf = Tensor::zeros({n}), sr = Tensor::zeros({n});
      const RmspropHyper h{0.01, 0.99, 1e-8, 1e-4};
      for (const Tensor& g : grads) {
        fast().rmsprop_update(wf, g, sf, h);
        ref().rmsprop_update(wr, g, sr, h);
      }
      EXPECT_LE(max_ulp(wf.to_vector(), wr.to_vector()), 1) << "rmsprop n " << n;
      EXPECT_LE(max_ulp(sf.to_vector(), sr.to_vector()), 1) << "rmsprop s n " << n;
    }
    {
      Tensor wf = w0.clone(), wr = w0.clone();
      Tensor mf = Tensor::zeros({n}), mr = Tensor::zeros({n}), vf = Tensor::zeros({n}), vr = Tensor::zeros({n});
      AdamHyper h{1e-3, 0.9, 0.999, 1e-8, 1e-4, 1};
      for (const Tensor& g : grads) {
        fast().adam_update(wf, g, mf, vf, h);
        ref().adam_update(wr, g, mr, vr, h);
        ++h.step;
      }
      EXPECT_LE(max_ulp(wf.to_vector(), wr.to_vector()), 1) << "adam n " << n;
      EXPECT_LE(max_ulp(mf.to_vector(), mr.to_vector()), 1) << "adam m n " << n;
      EXPECT_LE(max_ulp(vf.to_vector(), vr.to_vector()), 1) << "adam v n " << n;
    }
  }
}

// ---------------------------------------------------------------- dispatch

TEST(CpuBackend, DispatchPicksFastBackendForF32) {
  EXPECT_EQ(dispatch(Device::cpu(), DType::kF32).name(), "cpu");
  EXPECT_EQ(dispatch(Device::cpu(), DType::kF64).name(), "reference");
  ReferenceKernelsScope scope;
  EXPECT_EQ(dispatch(Device::cpu(), DType::kF32).name(), "reference");
}

}  // namespace
}  // namespace dtrain
