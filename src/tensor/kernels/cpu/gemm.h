// Single-precision matrix multiply for the fast CPU backend, on one of two libraries:
// oneDNN's dnnl_sgemm (picks its AVX-512 kernel from the CPU it runs on) or OpenBLAS's
// cblas_sgemm (whose kernel choice follows OPENBLAS_CORETYPE: the development machines force
// Haswell, i.e. AVX2, at about half the AVX-512 rate). The switch exists so that cost can be
// measured; oneDNN is the default.
#pragma once

#include <cstdint>

namespace dtrain {

enum class GemmLibrary : std::uint8_t { kOneDnn, kOpenBlas };

// Process-wide; takes effect for the next linear-layer call on any thread.
void set_gemm_library(GemmLibrary library);
GemmLibrary gemm_library();
const char* gemm_library_name(GemmLibrary library);

// Row-major C[M, N] = alpha * op(A) op(B) + beta * C, op(X) = X^T when trans_x is set
// (op(A) is [M, K], op(B) is [K, N]; lda, ldb, ldc are row strides of A, B, C as stored).
void sgemm(bool trans_a, bool trans_b, std::int64_t M, std::int64_t N, std::int64_t K, float alpha, const float* A,
           std::int64_t lda, const float* B, std::int64_t ldb, float beta, float* C, std::int64_t ldc);

// An operand of gemm_bf16 as stored: f32, or bf16 already (a bf16 activation:
// Backend::relu_forward_activation), which is read as it is where it is stored dense.
struct GemmBf16Operand {
  const void* data = nullptr;
  bool is_bf16 = false;
};

// The same as sgemm with op(A) and op(B) rounded to bf16 and multiplied on oneDNN's bf16 matmul (the
// CPU's bf16 dot products), the sums and C in f32 (compute_precision.h; gemm_bf16.cpp). alpha 1
// and beta 0 or 1 only (what the linear layers use).
void gemm_bf16(bool trans_a, bool trans_b, std::int64_t M, std::int64_t N, std::int64_t K, float alpha,
               GemmBf16Operand A, std::int64_t lda, GemmBf16Operand B, std::int64_t ldb, float beta, float* C,
               std::int64_t ldc);

// gemm_bf16 with beta 0 and C in bf16: C = scale * op(A) op(B), the f32 sums scaled and rounded to the nearest
// bf16 (ties to even) as they leave the matmul, so C has the bits of rounding scale times gemm_bf16's f32 C
// (a weight gradient written straight into a bf16 wire slot: backend.h, WeightGradInto). K > 0.
void gemm_bf16_scaled_to_bf16(bool trans_a, bool trans_b, std::int64_t M, std::int64_t N, std::int64_t K,
                              GemmBf16Operand A, std::int64_t lda, GemmBf16Operand B, std::int64_t ldb, float scale,
                              std::uint16_t* C, std::int64_t ldc);

// sgemm, or gemm_bf16 where the compute precision is bf16: the linear layers' matrix products.
void matrix_multiply(bool trans_a, bool trans_b, std::int64_t M, std::int64_t N, std::int64_t K, float alpha,
                     const float* A, std::int64_t lda, const float* B, std::int64_t ldb, float beta, float* C,
                     std::int64_t ldc);

}  // namespace dtrain
