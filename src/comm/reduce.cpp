#include "comm/reduce.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdint>

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
      sum_16<convert_f16_to_f32, convert_f32_to_f16>(static_cast<std::uint16_t*>(dst),
                                                     static_cast<const std::uint16_t*>(src), count);
      return;
    case DType::kBF16:
      sum_16<convert_bf16_to_f32, convert_f32_to_bf16>(static_cast<std::uint16_t*>(dst),
                                                       static_cast<const std::uint16_t*>(src), count);
      return;
    default:
      check_reducible(dtype, "reduce_sum");
  }
}

}  // namespace dtrain::comm
