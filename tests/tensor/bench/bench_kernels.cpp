// Micro-benchmark of the fast CPU kernels on the project's reference workloads:
//   1. ResNet-20 convolutions at batch 64 (forward, backward data, backward weights per layer
//      shape, and the per-step total over the network's 21 convolutions), plus the batch norm,
//      ReLU and residual-add passes of one training step;
//   2. sgemm GFLOP/s for the MLP's shapes (784x512, 512x512; batch 64 and 256) with oneDNN and
//      OpenBLAS;
//   3. the MLP's ReLU and add passes against a copy of as many bytes;
//   4. in bf16, the weight gradient of ResNet-20's and LeNet's convolutions on dtrain's kernel
//      (kernels/cpu/conv_weight_grad_bf16.h) against oneDNN's bf16 primitive, interleaved call by call.
// Each figure is the median of several repetitions after warm-up, at 1 and 2 threads.
// Usage: [BENCH_STAT=min] bench_kernels [threads...]   (default: 1 2)
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "core/threads.h"
#include "tensor/backend.h"
#include "tensor/kernels/cpu/compute_precision.h"
#include "tensor/kernels/cpu/conv_weight_grad_bf16.h"
#include "tensor/kernels/cpu/cpu_backend.h"
#include "tensor/kernels/cpu/gemm.h"
#include "tensor/tensor.h"

namespace {

using namespace dtrain;
using Clock = std::chrono::steady_clock;

// Median (or, with BENCH_STAT=min, minimum: steadier on a shared, noisy machine) of `reps` timed
// runs after two warm-up runs (primitive creation, page faults).
double median_ms(int reps, const std::function<void()>& f) {
  static const bool use_min = [] {
    const char* s = std::getenv("BENCH_STAT");
    return s != nullptr && std::string(s) == "min";
  }();
  f();
  f();
  std::vector<double> t;
  for (int r = 0; r < reps; ++r) {
    const auto t0 = Clock::now();
    f();
    t.push_back(std::chrono::duration<double, std::milli>(Clock::now() - t0).count());
  }
  std::sort(t.begin(), t.end());
  return use_min ? t.front() : t[t.size() / 2];
}

Tensor random_tensor(const Shape& s, Layout layout = Layout::kPlain) {
  static std::mt19937 rng(42);
  std::uniform_real_distribution<float> d(-1.0f, 1.0f);
  std::vector<float> v(static_cast<std::size_t>(s.numel()));
  for (float& x : v) x = d(rng);
  return Tensor::from_vector(v, s).to_layout(layout);
}

struct ConvLayer {
  const char* name;
  std::int64_t C, O, HW, K, stride, count;
  bool first;  // the input layer: no gradient w.r.t. its input
};

const ConvLayer kResNet20[] = {
    {"conv1 3->16 32x32 k3", 3, 16, 32, 3, 1, 1, true},
    {"16->16 32x32 k3", 16, 16, 32, 3, 1, 6, false},
    {"16->32 32x32 k3 s2", 16, 32, 32, 3, 2, 1, false},
    {"16->32 32x32 k1 s2", 16, 32, 32, 1, 2, 1, false},
    {"32->32 16x16 k3", 32, 32, 16, 3, 1, 5, false},
    {"32->64 16x16 k3 s2", 32, 64, 16, 3, 2, 1, false},
    {"32->64 16x16 k1 s2", 32, 64, 16, 1, 2, 1, false},
    {"64->64 8x8 k3", 64, 64, 8, 3, 1, 5, false},
};

void bench_resnet(int reps) {
  Backend& be = cpu_backend();
  const std::int64_t N = 64;
  double total_fwd = 0, total_bwd = 0, total_flop = 0;
  std::printf("  %-22s %5s %9s %9s %9s %9s %8s\n", "layer (batch 64)", "count", "fwd ms", "bwd_d ms", "bwd_w ms",
              "f+b ms", "GFLOP/s");
  for (const ConvLayer& l : kResNet20) {
    const Conv2dGeometry g{l.stride, l.stride, l.K / 2, l.K / 2};
    const std::int64_t OHW = (l.HW + 2 * (l.K / 2) - l.K) / l.stride + 1;
    const Layout xl = cpu_activation_layout(l.C);
    const Tensor x = random_tensor({N, l.C, l.HW, l.HW}, xl);
    const Tensor w = random_tensor({l.O, l.C, l.K, l.K});
    const Tensor dy = random_tensor({N, l.O, OHW, OHW}, cpu_activation_layout(l.O));
    const double f = median_ms(reps, [&] { (void)be.conv2d_forward(x, w, nullptr, g); });
    const double bd =
        median_ms(reps, [&] { (void)be.conv2d_backward_data(dy, w, x.shape(), x.layout(), g); });
    const double bw = median_ms(reps, [&] { (void)be.conv2d_backward_weights(dy, x, w.shape(), false, g); });
    const double fb = f + (l.first ? 0.0 : bd) + bw;
    const double flop = 2.0 * static_cast<double>(N * l.O * OHW * OHW * l.C * l.K * l.K);
    const double passes = l.first ? 2.0 : 3.0;
    std::printf("  %-22s %5lld %9.3f %9.3f %9.3f %9.3f %8.1f%s\n", l.name, static_cast<long long>(l.count), f, bd, bw,
                fb, passes * flop / fb * 1e-6, l.first ? "  (bwd_d not needed)" : "");
    total_fwd += static_cast<double>(l.count) * f;
    total_bwd += static_cast<double>(l.count) * (fb - f);
    total_flop += static_cast<double>(l.count) * passes * flop;
  }
  const double total = total_fwd + total_bwd;
  std::printf("  all 21 convs: fwd %.1f ms + bwd %.1f ms = %.1f ms per step (%.0f GFLOP/s) -> conv-only %.0f samples/s\n",
              total_fwd, total_bwd, total, total_flop / total * 1e-6, 64.0 / total * 1e3);

  // The other per-step passes of a ResNet-20 training step: 19 batch norms + 19 ReLUs (fwd + bwd),
  // 9 residual adds. Shapes: per stage (32x32x16, 16x16x32, 8x8x64), 7/6/6 BN+ReLU per stage.
  const std::int64_t counts[3] = {7, 6, 6};
  const std::int64_t shapes[3][2] = {{16, 32}, {32, 16}, {64, 8}};
  double other = 0;
  for (int s = 0; s < 3; ++s) {
    const std::int64_t C = shapes[s][0], HW = shapes[s][1];
    const Tensor x = random_tensor({N, C, HW, HW}, cpu_activation_layout(C));
    const Tensor dy = random_tensor({N, C, HW, HW}, cpu_activation_layout(C));
    const Tensor gamma = random_tensor({C}), beta = random_tensor({C});
    const BatchNormForward fwd = be.batch_norm_forward_training(x, gamma, beta, 1e-5);
    const double bnf = median_ms(reps, [&] { (void)be.batch_norm_forward_training(x, gamma, beta, 1e-5); });
    const double bnb = median_ms(reps, [&] { (void)be.batch_norm_backward(dy, x, gamma, fwd.mean, fwd.var, 1e-5); });
    const double rf = median_ms(reps, [&] { (void)be.relu_forward(x); });
    const double rb = median_ms(reps, [&] { (void)be.relu_backward(x, dy); });
    const double add = median_ms(reps, [&] { (void)be.add(x, dy); });
    const double step = static_cast<double>(counts[s]) * (bnf + bnb + rf + rb) + 3.0 * add;
    std::printf("  stage %d [64,%lld,%lld,%lld]: bn fwd %.3f bwd %.3f, relu fwd %.3f bwd %.3f, add %.3f ms -> %.1f ms/step\n",
                s + 1, static_cast<long long>(C), static_cast<long long>(HW), static_cast<long long>(HW), bnf, bnb, rf,
                rb, add, step);
    other += step;
  }
  std::printf("  conv + bn + relu + add: %.1f ms per step -> %.0f samples/s (kernels only)\n", total + other,
              64.0 / (total + other) * 1e3);
}

void bench_gemm(int reps) {
  struct G {
    std::int64_t N, I, O;
  };
  const G shapes[] = {{64, 784, 512}, {64, 512, 512}, {256, 784, 512}, {256, 512, 512}};
  std::printf("  %-20s %-9s %9s %9s %9s %9s\n", "shape", "library", "fwd", "bwd_data", "bwd_wts", "GFLOP/s");
  for (const G& s : shapes) {
    const Tensor x = random_tensor({s.N, s.I});
    const Tensor w = random_tensor({s.O, s.I});
    const Tensor dy = random_tensor({s.N, s.O});
    Tensor y = Tensor::empty({s.N, s.O}), dx = Tensor::empty({s.N, s.I}), dw = Tensor::empty({s.O, s.I});
    const double flop = 2.0 * static_cast<double>(s.N * s.I * s.O);
    for (GemmLibrary lib : {GemmLibrary::kOneDnn, GemmLibrary::kOpenBlas}) {
      set_gemm_library(lib);
      const int r = reps * 20;
      const double f = median_ms(r, [&] {
        sgemm(false, true, s.N, s.O, s.I, 1.0f, x.data<float>(), s.I, w.data<float>(), s.I, 0.0f, y.data<float>(),
              s.O);
      });
      const double bd = median_ms(r, [&] {
        sgemm(false, false, s.N, s.I, s.O, 1.0f, dy.data<float>(), s.O, w.data<float>(), s.I, 0.0f,
              dx.data<float>(), s.I);
      });
      const double bw = median_ms(r, [&] {
        sgemm(true, false, s.O, s.I, s.N, 1.0f, dy.data<float>(), s.O, x.data<float>(), s.I, 0.0f, dw.data<float>(),
              s.I);
      });
      const std::string name = std::to_string(s.N) + "x" + std::to_string(s.I) + "->" + std::to_string(s.O);
      std::printf("  %-20s %-9s %9.1f %9.1f %9.1f %9.1f   (GFLOP/s per pass; last: all three)\n", name.c_str(),
                  gemm_library_name(lib), flop / f * 1e-6, flop / bd * 1e-6, flop / bw * 1e-6,
                  3 * flop / (f + bd + bw) * 1e-6);
    }
  }
  set_gemm_library(GemmLibrary::kOneDnn);
}

// The MLP's elementwise passes (64 x 512, below the kernels' parallel threshold: one thread) on
// random signs, against a copy of as many bytes in the same run (std::memcpy: the memory system's
// rate for that traffic). A pass that runs as scalar code with a branch per element (as ReLU's
// backward did, elementwise.cpp) shows as a ratio of several times the copy.
void bench_small_elementwise(int reps) {
  const Shape shape{64, 512};
  const Tensor x = random_tensor(shape), dy = random_tensor(shape);
  const std::size_t bytes = static_cast<std::size_t>(shape.numel()) * sizeof(float);
  std::vector<float> a(shape.numel()), b(shape.numel()), c(shape.numel());
  const int r = reps * 50;
  // relu forward reads one tensor and writes one, as a copy does; relu backward and add read two
  // and write one, against two copies (a little more: two reads and two writes).
  const double one_copy = median_ms(r, [&] { std::memcpy(b.data(), a.data(), bytes); });
  const double two_copies = median_ms(r, [&] {
    std::memcpy(b.data(), a.data(), bytes);
    std::memcpy(c.data(), a.data(), bytes);
  });
  Backend& be = cpu_backend();
  const double rf = median_ms(r, [&] { (void)be.relu_forward(x); });
  const double rb = median_ms(r, [&] { (void)be.relu_backward(x, dy); });
  const double add = median_ms(r, [&] { (void)be.add(x, dy); });
  std::printf("  [64,512]: relu fwd %.1f us (%.1fx a copy), relu bwd %.1f us (%.1fx), add %.1f us (%.1fx)\n", rf * 1e3,
              rf / one_copy, rb * 1e3, rb / two_copies, add * 1e3, add / two_copies);
}

// The bf16 weight gradient of each ResNet-20 shape dtrain's kernel takes (16-channel multiples) and
// LeNet's second convolution, batch 64, on bf16 x and dy in nChw16c (as a bf16 step hands them over):
// dtrain's kernel and oneDNN's primitive called in turn, `reps` times each, medians.
void bench_bf16_weight_grad(int reps) {
  if (!cpu_has_bf16()) {
    std::printf("  skipped: this CPU has no bf16 dot products\n");
    return;
  }
  const ComputePrecisionScope bf16(ComputePrecision::kBF16);
  Backend& be = cpu_backend();
  const std::int64_t N = 64;
  std::vector<ConvLayer> layers(std::begin(kResNet20) + 1, std::end(kResNet20));
  layers.push_back({"lenet 32->64 14x14 k5", 32, 64, 14, 5, 1, 1, false});
  std::printf("  %-22s %5s %9s %9s %8s %9s\n", "layer (batch 64)", "count", "dtrain ms", "oneDNN ms", "ratio",
              "GFLOP/s");
  double own_step = 0, onednn_step = 0;
  for (const ConvLayer& l : layers) {
    const Conv2dGeometry g{l.stride, l.stride, l.K / 2, l.K / 2};
    const std::int64_t OHW = (l.HW + 2 * (l.K / 2) - l.K) / l.stride + 1;
    const Tensor x = random_tensor({N, l.C, l.HW, l.HW}, cpu_activation_layout(l.C)).to(DType::kBF16);
    const Tensor dy = random_tensor({N, l.O, OHW, OHW}, cpu_activation_layout(l.O)).to(DType::kBF16);
    const Shape ws{l.O, l.C, l.K, l.K};
    std::vector<double> own, onednn;
    for (int r = 0; r < reps + 2; ++r) {
      for (const bool on : {true, false}) {
        cpu::set_bf16_weight_grad_kernel(on);
        const auto t0 = Clock::now();
        (void)be.conv2d_backward_weights(dy, x, ws, false, g);
        const double ms = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
        if (r >= 2) (on ? own : onednn).push_back(ms);  // the first two: primitive creation, page faults
      }
    }
    cpu::set_bf16_weight_grad_kernel(true);
    std::sort(own.begin(), own.end());
    std::sort(onednn.begin(), onednn.end());
    const double a = own[own.size() / 2], b = onednn[onednn.size() / 2];
    const double flop = 2.0 * static_cast<double>(N * l.O * OHW * OHW * l.C * l.K * l.K);
    std::printf("  %-22s %5lld %9.3f %9.3f %7.2fx %9.1f\n", l.name, static_cast<long long>(l.count), a, b, b / a,
                flop / a * 1e-6);
    if (l.K != 5) {
      own_step += static_cast<double>(l.count) * a;
      onednn_step += static_cast<double>(l.count) * b;
    }
  }
  std::printf("  ResNet-20's 20 layers: dtrain %.2f ms, oneDNN %.2f ms per step (%.2fx)\n", own_step, onednn_step,
              onednn_step / own_step);
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<int> threads;
  for (int i = 1; i < argc; ++i) threads.push_back(std::atoi(argv[i]));
  if (threads.empty()) threads = {1, 2};
  const char* core = std::getenv("OPENBLAS_CORETYPE");
  const char* stat = std::getenv("BENCH_STAT");
  std::printf("OpenBLAS build %s, OPENBLAS_CORETYPE=%s, statistic: %s\n", openblas_build(), core ? core : "(unset)",
              stat != nullptr && std::string(stat) == "min" ? "min" : "median");
  for (int t : threads) {
    set_num_threads(t);
    std::printf("\n== %d thread(s): ResNet-20 convolutions, batch 64 ==\n", t);
    bench_resnet(t == 1 ? 7 : 9);
    std::printf("\n== %d thread(s): sgemm, MLP shapes ==\n", t);
    bench_gemm(t == 1 ? 7 : 9);
    std::printf("\n== %d thread(s): elementwise passes, MLP shapes ==\n", t);
    bench_small_elementwise(t == 1 ? 7 : 9);
    std::printf("\n== %d thread(s): bf16 weight gradients, dtrain's kernel against oneDNN's ==\n", t);
    bench_bf16_weight_grad(15);
  }
  return 0;
}
