#include "comm/reduce.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdint>
#include <cstring>

#if defined(__AVX512F__)
#include <immintrin.h>
// GCC 12 reports its own _mm512_undefined_* helpers as maybe-uninitialized when inlined.
#if !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#endif

#include "core/error.h"

namespace dtrain::comm {
namespace {

void sum_f32(float* __restrict dst, const float* __restrict src, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) dst[i] += src[i];
}

// 16-bit sums go through f32 in blocks that stay in L1 (2 x 2 KiB), so the bulk conversions
// (vectorised for f16) do the work and nothing is allocated.
template <void (*ToF32)(const std::uint16_t*, float*, std::size_t),
          void (*FromF32)(const float*, std::uint16_t*, std::size_t)>
void sum_16(std::uint16_t* dst, const std::uint16_t* src, std::size_t n) {
  constexpr std::size_t kBlock = 512;
  alignas(64) float a[kBlock];
  alignas(64) float b[kBlock];
  for (std::size_t i = 0; i < n; i += kBlock) {
    const std::size_t m = std::min(kBlock, n - i);
    ToF32(dst + i, a, m);
    ToF32(src + i, b, m);
    sum_f32(a, b, m);
    FromF32(a, dst + i, m);
  }
}

// With AVX-512 the same sums are fused in registers, 16 elements at a time: widen both operands to
// f32 (exact for both formats), add, and round once back to 16 bits, with no pass through memory
// in between. f16 rounds with the hardware's conversion (round to nearest even, as f32_to_f16);
// bf16 with integer arithmetic that is f32_to_bf16's: add 0x7fff plus the lowest kept bit, keep
// the top 16 bits, and quieten NaNs. The blocked loop finishes the last n mod 16 elements.
#if defined(__AVX512F__)
void sum_f16(std::uint16_t* dst, const std::uint16_t* src, std::size_t n) {
  std::size_t i = 0;
  for (; i + 16 <= n; i += 16) {
    const __m512 a = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(dst + i)));
    const __m512 b = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(src + i)));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(dst + i),
                        _mm512_cvtps_ph(_mm512_add_ps(a, b), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
  }
  sum_16<convert_f16_to_f32, convert_f32_to_f16>(dst + i, src + i, n - i);
}

__m512 widen_bf16(const std::uint16_t* p) {
  const __m512i x = _mm512_cvtepu16_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
  return _mm512_castsi512_ps(_mm512_slli_epi32(x, 16));
}

// f32_to_bf16 on 16 lanes.
__m256i round_to_bf16(__m512 v) {
  const __m512i bias = _mm512_set1_epi32(0x7fff), one = _mm512_set1_epi32(1), quiet = _mm512_set1_epi32(0x40);
  const __m512i x = _mm512_castps_si512(v);
  const __m512i lowest_kept = _mm512_and_si512(_mm512_srli_epi32(x, 16), one);
  __m512i r = _mm512_srli_epi32(_mm512_add_epi32(x, _mm512_add_epi32(bias, lowest_kept)), 16);
  const __mmask16 nan = _mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q);
  r = _mm512_mask_or_epi32(r, nan, _mm512_srli_epi32(x, 16), quiet);
  return _mm512_cvtepi32_epi16(r);
}

void sum_bf16(std::uint16_t* dst, const std::uint16_t* src, std::size_t n) {
  std::size_t i = 0;
  for (; i + 16 <= n; i += 16) {
    const __m512 sum = _mm512_add_ps(widen_bf16(dst + i), widen_bf16(src + i));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(dst + i), round_to_bf16(sum));
  }
  sum_16<convert_bf16_to_f32, convert_f32_to_bf16>(dst + i, src + i, n - i);
}
#else
void sum_f16(std::uint16_t* dst, const std::uint16_t* src, std::size_t n) {
  sum_16<convert_f16_to_f32, convert_f32_to_f16>(dst, src, n);
}

void sum_bf16(std::uint16_t* dst, const std::uint16_t* src, std::size_t n) {
  sum_16<convert_bf16_to_f32, convert_f32_to_bf16>(dst, src, n);
}
#endif

}  // namespace

bool reducible(DType dtype) { return dtype == DType::kF32 || dtype == DType::kF16 || dtype == DType::kBF16; }

void check_reducible(DType dtype, const char* op) {
  if (!reducible(dtype)) {
    throw InputError(
        fmt::format("{}: cannot sum dtype {}; collectives reduce f32, f16 and bf16", op, dtype_name(dtype)));
  }
}

void reduce_sum(void* dst, const void* src, std::size_t count, DType dtype) {
  switch (dtype) {
    case DType::kF32:
      sum_f32(static_cast<float*>(dst), static_cast<const float*>(src), count);
      return;
    case DType::kF16:
      sum_f16(static_cast<std::uint16_t*>(dst), static_cast<const std::uint16_t*>(src), count);
      return;
    case DType::kBF16:
      sum_bf16(static_cast<std::uint16_t*>(dst), static_cast<const std::uint16_t*>(src), count);
      return;
    default:
      check_reducible(dtype, "reduce_sum");
  }
}

namespace {

constexpr std::uint32_t kExponent = 0x7f800000u;

std::uint32_t exponent_field(float v) {
  std::uint32_t bits;
  std::memcpy(&bits, &v, sizeof bits);
  return bits & kExponent;
}

}  // namespace

bool all_finite(const float* x, std::size_t count) {
  std::uint32_t worst = 0;
  for (std::size_t i = 0; i < count; ++i) worst = std::max(worst, exponent_field(x[i]));
  return worst != kExponent;
}

bool scale_all_finite(float* x, std::size_t count, float scale) {
  std::uint32_t worst = 0;
  for (std::size_t i = 0; i < count; ++i) {
    x[i] *= scale;
    worst = std::max(worst, exponent_field(x[i]));
  }
  return worst != kExponent;
}

// With AVX-512 both run 16 elements at a time in registers (the conversions as sum_f16's and
// sum_bf16's); the blocked loops finish the last count mod 16.
void scaled_to_16bit(DType to, const float* src, std::uint16_t* dst, std::size_t count, float scale) {
  DT_CHECK(to == DType::kF16 || to == DType::kBF16, "a 16-bit cast to {}", dtype_name(to));
  std::size_t i = 0;
#if defined(__AVX512F__)
  const __m512 s = _mm512_set1_ps(scale);
  const auto store = [dst](std::size_t at, __m256i h) { _mm256_storeu_si256(reinterpret_cast<__m256i*>(dst + at), h); };
  if (to == DType::kF16) {
    for (; i + 16 <= count; i += 16) {
      store(i,
            _mm512_cvtps_ph(_mm512_mul_ps(_mm512_loadu_ps(src + i), s), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
    }
  } else {
    for (; i + 16 <= count; i += 16) store(i, round_to_bf16(_mm512_mul_ps(_mm512_loadu_ps(src + i), s)));
  }
#endif
  constexpr std::size_t kBlock = 512;
  alignas(64) float block[kBlock];
  for (; i < count; i += kBlock) {
    const std::size_t m = std::min(kBlock, count - i);
    for (std::size_t k = 0; k < m; ++k) block[k] = scale * src[i + k];
    convert_f32_to_16bit(to, block, dst + i, m);
  }
}

bool widen_all_finite(DType from, const std::uint16_t* src, float* dst, std::size_t count) {
  DT_CHECK(from == DType::kF16 || from == DType::kBF16, "a 16-bit cast from {}", dtype_name(from));
  std::size_t i = 0;
  bool finite = true;
#if defined(__AVX512F__)
  const __m512i exponent = _mm512_set1_epi32(static_cast<int>(kExponent));
  __mmask16 not_finite = 0;
  const auto keep = [&](std::size_t at, __m512 x) {
    _mm512_storeu_ps(dst + at, x);
    not_finite |= _mm512_cmpeq_epi32_mask(_mm512_and_si512(_mm512_castps_si512(x), exponent), exponent);
  };
  if (from == DType::kF16) {
    for (; i + 16 <= count; i += 16) {
      keep(i, _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(src + i))));
    }
  } else {
    for (; i + 16 <= count; i += 16) keep(i, widen_bf16(src + i));
  }
  finite = not_finite == 0;
#endif
  constexpr std::size_t kBlock = 512;  // checked while the block just written is in L1
  for (; i < count; i += kBlock) {
    const std::size_t m = std::min(kBlock, count - i);
    convert_16bit_to_f32(from, src + i, dst + i, m);
    finite = all_finite(dst + i, m) && finite;
  }
  return finite;
}

}  // namespace dtrain::comm
