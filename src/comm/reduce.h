// The reduction the collectives apply: elementwise sum, dst[i] += src[i].
//
// Where sums are accumulated and rounded: f32 adds in f32. f16 and bf16 are wire and storage
// types: each addition converts both operands to f32, adds in f32 and rounds the result once to
// the 16-bit type (round to nearest even). A p-rank allreduce therefore rounds p-1 times per
// element, in the order the algorithm combines contributions (ring: along the ring; tree and
// butterfly: pairwise). Integer-valued data whose partial sums fit the type's significand (f16:
// |x| <= 2048, bf16: |x| <= 256) is summed exactly by every algorithm; otherwise results differ
// between algorithms by rounding, but every algorithm leaves bitwise identical results on all
// ranks (each element's final sum is computed on one rank and copied to the others).
#pragma once

#include <cstddef>

#include "tensor/dtype.h"

namespace dtrain::comm {

// True for the dtypes collectives reduce: f32, f16, bf16.
bool reducible(DType dtype);
// Throws InputError naming the dtype unless reducible(dtype).
void check_reducible(DType dtype, const char* op);
// dst[i] = dst[i] + src[i] for i < count (dst and src do not overlap).
void reduce_sum(void* dst, const void* src, std::size_t count, DType dtype);

// Whether no element of x is NaN or Inf: the largest exponent field decides (all ones means NaN
// or Inf), an integer max over the bits, so it vectorises without -ffast-math. Serial on purpose:
// it runs on communication threads, which must not start an OpenMP team beside the compute's.
bool all_finite(const float* x, std::size_t count);
// x[i] *= scale for i < count, and whether every result is finite, in one pass. With
// 0 < scale <= 1 (a mean's 1/p) a result is finite exactly when its x was.
bool scale_all_finite(float* x, std::size_t count, float scale);

// How a gradient enters and leaves a 16-bit wire bucket (parallel/buckets.h), one pass each way,
// through f32 blocks that stay in L1 (the bulk conversions do the work): dst[i] = scale * src[i]
// rounded to `to` (kF16 or kBF16; the product is the f32 product, rounded once), and dst[i] =
// src[i] widened from `from`, returning whether every element is finite. Serial, as above.
void scaled_to_16bit(DType to, const float* src, std::uint16_t* dst, std::size_t count, float scale);
bool widen_all_finite(DType from, const std::uint16_t* src, float* dst, std::size_t count);

}  // namespace dtrain::comm
