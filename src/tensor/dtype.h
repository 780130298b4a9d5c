// Element types. Compute is f32 (f64 for double-precision gradient checks on the reference
// kernels); f16 and bf16 are storage types for gradient communication and checkpoints; i32 holds
// labels. Conversions round to nearest even, as IEEE 754 and PyTorch do.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string_view>

namespace dtrain {

enum class DType : std::uint8_t { kF32, kF64, kF16, kBF16, kI32 };

std::size_t dtype_size(DType t);
std::string_view dtype_name(DType t);
// Parses "f32", "f64", "f16", "bf16", "i32"; throws InputError listing the valid names.
DType parse_dtype(std::string_view name);

// Scalar conversions (bit-exact round to nearest even; NaN stays NaN, overflow goes to inf).
std::uint16_t f32_to_f16(float f);
float f16_to_f32(std::uint16_t h);
std::uint16_t f32_to_bf16(float f);
inline float bf16_to_f32(std::uint16_t b) {
  std::uint32_t u = static_cast<std::uint32_t>(b) << 16;
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}

// Bulk conversions between f32 and a 16-bit type (dst/src hold n elements).
void convert_f32_to_f16(const float* src, std::uint16_t* dst, std::size_t n);
void convert_f16_to_f32(const std::uint16_t* src, float* dst, std::size_t n);
void convert_f32_to_bf16(const float* src, std::uint16_t* dst, std::size_t n);
void convert_bf16_to_f32(const std::uint16_t* src, float* dst, std::size_t n);
// The same for a 16-bit type named at run time (kF16 or kBF16; a 16-bit wire's casts).
void convert_f32_to_16bit(DType to, const float* src, std::uint16_t* dst, std::size_t n);
void convert_16bit_to_f32(DType from, const std::uint16_t* src, float* dst, std::size_t n);

}  // namespace dtrain
