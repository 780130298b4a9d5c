#include "tensor/kernels/cpu/gemm.h"

#include <cblas.h>

#include <atomic>
#include <dnnl.hpp>
#include <limits>

#include "core/error.h"
#include "tensor/kernels/cpu/compute_precision.h"

namespace dtrain {
namespace {

std::atomic<GemmLibrary> g_library{GemmLibrary::kOneDnn};

}  // namespace

void set_gemm_library(GemmLibrary library) { g_library.store(library, std::memory_order_relaxed); }
GemmLibrary gemm_library() { return g_library.load(std::memory_order_relaxed); }
const char* gemm_library_name(GemmLibrary library) { return library == GemmLibrary::kOneDnn ? "onednn" : "openblas"; }

void sgemm(bool trans_a, bool trans_b, std::int64_t M, std::int64_t N, std::int64_t K, float alpha, const float* A,
           std::int64_t lda, const float* B, std::int64_t ldb, float beta, float* C, std::int64_t ldc) {
  if (M == 0 || N == 0) return;
  if (gemm_library() == GemmLibrary::kOpenBlas) {
    constexpr std::int64_t kMax = std::numeric_limits<blasint>::max();
    DT_CHECK(M <= kMax && N <= kMax && K <= kMax && lda <= kMax && ldb <= kMax && ldc <= kMax,
             "sgemm extents exceed OpenBLAS's index type ({} x {} x {})", M, N, K);
    cblas_sgemm(CblasRowMajor, trans_a ? CblasTrans : CblasNoTrans, trans_b ? CblasTrans : CblasNoTrans,
                static_cast<blasint>(M), static_cast<blasint>(N), static_cast<blasint>(K), alpha, A,
                static_cast<blasint>(lda), B, static_cast<blasint>(ldb), beta, C, static_cast<blasint>(ldc));
    return;
  }
  const dnnl_status_t st =
      dnnl_sgemm(trans_a ? 'T' : 'N', trans_b ? 'T' : 'N', M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
  if (st != dnnl_success) {
    throw InternalError(fmt::format("dnnl_sgemm failed with status {} ({} x {} x {})", static_cast<int>(st), M, N, K));
  }
}

void matrix_multiply(bool trans_a, bool trans_b, std::int64_t M, std::int64_t N, std::int64_t K, float alpha,
                     const float* A, std::int64_t lda, const float* B, std::int64_t ldb, float beta, float* C,
                     std::int64_t ldc) {
  if (compute_precision() == ComputePrecision::kBF16) {
    gemm_bf16(trans_a, trans_b, M, N, K, alpha, {A}, lda, {B}, ldb, beta, C, ldc);
  } else {
    sgemm(trans_a, trans_b, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
  }
}

}  // namespace dtrain
