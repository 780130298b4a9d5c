// A convolution's weight gradient in bf16 on the CPU's AVX512_BF16 dot products (dtrain's own
// kernel; conv.cpp runs it in place of oneDNN's backward-weights primitive where it applies).
//
//   dW[o][c][kh][kw] = sum over n, oh, ow of dy[n][o][oh][ow] * x[n][c][oh*sh + kh - ph][ow*sw + kw - pw]
//   db[o]            = sum over n, oh, ow of dy[n][o][oh][ow]
//
// vdpbf16ps adds a product of two bf16 pairs to each f32 lane: lane o gets
// dy[o][ow] * x[c][iw] + dy[o][ow+1] * x[c][iw+sw], one pair of neighbouring outputs (ow, ow+1) of
// the reduction. dy's pairs are interleaved once per image (16 output channels a vector); x's pairs
// are stored once per image as 32-bit (x[iw], x[iw+sw]) for every padded column iw and channel, so
// the pair a lane needs is one broadcast from memory. A tile of up to 24 accumulators (output-channel
// blocks x input channels x kw) sums over a chunk of images that stays in L2.
//
// Why not oneDNN: on AVX512_BF16 without AMX, oneDNN 2.6 and 3.7 run this pass at 1.2-1.4x their f32
// kernel at stride 1 and 0.6x at stride 2 (docs/mixed-precision.md), where forward and backward-data
// reach 1.8x. This kernel runs ResNet-20's 3x3 layers at batch 64 at 1.20-1.39x oneDNN's bf16 speed
// at stride 1 and 2.6x at stride 2 on two threads (1.13-1.44x on one), 1.37x over the step's layers:
// `tests/bench_kernels 1 2` (tests/tensor/bench/bench_kernels.cpp), the two interleaved.
//
// Cost: 2 N OH OW O C KH KW flops on the dot products, plus a pass per image that writes x's pairs
// (2x the padded image) and dy's (1x), both in L2.
#pragma once

#include <cstdint>

#include "tensor/backend.h"
#include "tensor/kernels/geometry.h"

namespace dtrain::cpu {

// Whether the kernel runs on this machine: built (AVX512_BF16 in the compiler's target, as
// -march=native gives on such a CPU), the CPU has the instructions, and has no AMX (where oneDNN's
// brgemm backward-weights kernel runs on the tile units instead).
bool bf16_weight_grad_available();

// Whether the kernel is available, switched on, and covers the
// problem: C and O multiples of 16, a kernel width of 3, 5 or 7. (A 1x1 kernel reads one column in
// two of the pairs built at stride 1 and one in four at stride 2; oneDNN's 1x1 kernel is faster there.)
bool bf16_weight_grad_applies(const ConvDims& d);

// On by default; off, conv.cpp runs oneDNN's bf16 primitive instead (process-wide, for benchmarks
// that compare the two in one run: tests/tensor/bench/bench_kernels.cpp).
void set_bf16_weight_grad_kernel(bool on);
bool bf16_weight_grad_kernel_on();

// x: [N, C/16, H, W, 16] bf16 (nChw16c); dy: [N, O/16, OH, OW, 16] bf16. Writes dW plain [O, C, KH,
// KW]: f32 into dw, or, where dw_bf16 is given, scale * dW rounded to the nearest bf16 (ties to even)
// into dw_bf16; db [O] f32 unless null. Runs on the OpenMP threads, images split among them.
void bf16_weight_grad(const ConvDims& d, const Conv2dGeometry& g, const std::uint16_t* x, const std::uint16_t* dy,
                      float* dw, std::uint16_t* dw_bf16, float scale, float* db);

}  // namespace dtrain::cpu
