// gemm_bf16 (gemm.h) on oneDNN's matmul primitive: op(A) and op(B) multiplied on the CPU's bf16 dot products
// with f32 sums into C (beta != 0: oneDNN's sum post-op adds C's old value). A bf16 operand is read as stored.
// A dense f32 B is rounded element by element into bf16 in its own layout (round_to_bf16) and read through its
// strides, transposed or not: the matmul packs B anyway, and a transposing reorder of a linear layer's weight
// ([1024, 3136] in LeNet) took 2.4 ms of a 25 ms bf16 step at batch 64, the rounding 0.5 ms. A dense f32 A is
// rounded so too unless transposed; a transposed or strided f32 operand goes through oneDNN's reorder into dense
// bf16 (the matmul read a transposed A [1024, 64] in 2.4 ms, a dense one in 1.4 ms after a 0.06 ms reorder).
// The reorders and the matmul are built once per shape (dnnl_util.h's cache).
//
// On T > 1 threads a product of at most 64 rows of A (a linear layer's batch) and wide enough is split into T
// blocks of C's columns, each thread running one block's matmul alone: oneDNN's matmul with a few rows of A packs
// the whole of B on every thread. LeNet's [64, 1024] x [1024, 3136] backward-data product took 1.17-1.21 ms on two
// threads (1.37-1.56 on one), 0.67-0.73 split in two; its forward 0.73 against 0.62 split; its step at batch 64 on
// two threads 12.83 -> 11.94 ms (five interleaved pairs).
#include <omp.h>

#include <bit>
#include <dnnl.hpp>
#include <exception>
#include <optional>

#include "core/error.h"
#include "tensor/kernels/cpu/compute_precision.h"
#include "tensor/kernels/cpu/dnnl_util.h"
#include "tensor/kernels/cpu/gemm.h"

namespace dtrain {
namespace {

using dnnl::memory;

// How an operand reaches the matmul in bf16: as stored (a bf16 operand), rounded in its own layout (a dense f32
// one) or reordered into dense bf16.
enum class Bf16Route { kAsStored, kRound, kReorder };

struct OperandPlan {
  memory::desc stored, matmul, scratch;  // as stored; as the matmul reads it; the reorder's scratchpad
  Bf16Route route = Bf16Route::kAsStored;
  dnnl::reorder reorder;
  std::int64_t elements = 0;
};

struct MatmulBf16Entry {
  OperandPlan a, b;
  memory::desc c, scratch;
  dnnl::matmul prim;
};

// [rows, cols] as stored: row-major with leading dimension ld, or its transpose.
memory::desc stored_md(std::int64_t rows, std::int64_t cols, bool transposed, std::int64_t ld, bool bf16) {
  return {{rows, cols},
          bf16 ? memory::data_type::bf16 : memory::data_type::f32,
          transposed ? memory::dims{1, ld} : memory::dims{ld, 1}};
}

OperandPlan plan_operand(std::int64_t rows, std::int64_t cols, bool transposed, std::int64_t ld, bool bf16,
                         bool strided_reads_well) {
  OperandPlan p;
  p.stored = stored_md(rows, cols, transposed, ld, bf16);
  p.elements = rows * cols;
  const bool dense = ld == (transposed ? rows : cols);
  if (bf16) return p.matmul = p.stored, p;
  if (dense && (strided_reads_well || !transposed)) {
    p.route = Bf16Route::kRound;
    p.matmul = stored_md(rows, cols, transposed, ld, true);
    return p;
  }
  p.route = Bf16Route::kReorder;
  p.matmul = memory::desc({rows, cols}, memory::data_type::bf16, memory::format_tag::ab);
  const dnnl::reorder::primitive_desc pd(cpu::dnnl_engine(), p.stored, cpu::dnnl_engine(), p.matmul,
                                         cpu::scratchpad_attr());
  p.reorder = dnnl::reorder(pd);
  p.scratch = pd.scratchpad_desc();
  return p;
}

// C in f32 (plus its old value where `accumulate`), or, where `bf16_scale` is given, scale times the f32 sums
// rounded to bf16 (oneDNN's output scale, applied before the conversion).
MatmulBf16Entry build(bool trans_a, bool trans_b, std::int64_t M, std::int64_t N, std::int64_t K, bool a_bf16,
                      std::int64_t lda, bool b_bf16, std::int64_t ldb, std::int64_t ldc, bool accumulate,
                      std::optional<float> bf16_scale = std::nullopt) {
  MatmulBf16Entry e;
  e.a = plan_operand(M, K, trans_a, lda, a_bf16, false);
  e.b = plan_operand(K, N, trans_b, ldb, b_bf16, true);
  e.c = memory::desc({M, N}, bf16_scale ? memory::data_type::bf16 : memory::data_type::f32, memory::dims{ldc, 1});
  dnnl::primitive_attr attr = cpu::scratchpad_attr();
  if (bf16_scale) attr.set_output_scales(0, {*bf16_scale});
  if (accumulate) {
    dnnl::post_ops sum;
    sum.append_sum(1.0f);
    attr.set_post_ops(sum);
  }
  const dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(e.a.matmul, e.b.matmul, e.c), attr, cpu::dnnl_engine());
  e.prim = dnnl::matmul(pd);
  e.scratch = pd.scratchpad_desc();
  return e;
}

// The operand as the matmul reads it: `x` itself, or its bf16 copy in `copy` (two bytes an element, in an f32
// tensor of half as many).
void* matmul_operand(const OperandPlan& p, GemmBf16Operand x, Tensor& copy) {
  if (p.route == Bf16Route::kAsStored) return const_cast<void*>(x.data);
  copy = Tensor::empty({(p.elements + 1) / 2}, DType::kF32);
  if (p.route == Bf16Route::kRound) {
    round_to_bf16(static_cast<const float*>(x.data), static_cast<std::uint16_t*>(copy.raw_data()), p.elements);
  } else {
    cpu::execute(p.reorder, p.scratch,
                 {{DNNL_ARG_FROM, cpu::mem(p.stored, const_cast<void*>(x.data))},
                  {DNNL_ARG_TO, cpu::mem(p.matmul, copy.raw_data())}});
  }
  return copy.raw_data();
}

void run(const MatmulBf16Entry& e, GemmBf16Operand A, GemmBf16Operand B, void* C) {
  Tensor a_copy, b_copy;
  void* a = matmul_operand(e.a, A, a_copy);
  void* b = matmul_operand(e.b, B, b_copy);
  cpu::execute(e.prim, e.scratch,
               {{DNNL_ARG_SRC, cpu::mem(e.a.matmul, a)},
                {DNNL_ARG_WEIGHTS, cpu::mem(e.b.matmul, b)},
                {DNNL_ARG_DST, cpu::mem(e.c, C)}});
}

// Rows of A above which oneDNN's own split (over rows) is left alone: at batch 256 mlp's products ran 6% slower
// split by columns (each thread then rounds or reads the whole of A), and LeNet's weight gradient ([1024, 64] x
// [64, 3136]) gained nothing in its step.
constexpr std::int64_t kMaxSplitRows = 64;
// Columns per thread below which a product is not split (a 16-wide block of the kernels, four times).
constexpr std::int64_t kMinSplitColumns = 64;
// Multiply-adds below which a product is not split: the parallel region's cost is a few microseconds.
constexpr double kMinSplitMultiplyAdds = 1 << 22;

// Runs `block(n0, columns)` over C's N columns: in one call, or, where the product is wide enough and this thread
// may start threads, in one block per thread (balanced, multiples of 16 columns but the last), each thread's matmul
// alone.
template <typename Block>
void over_column_blocks(std::int64_t M, std::int64_t N, std::int64_t K, Block&& block) {
  const int threads = omp_in_parallel() ? 1 : omp_get_max_threads();
  const double multiply_adds = static_cast<double>(M) * static_cast<double>(N) * static_cast<double>(K);
  if (threads < 2 || M > kMaxSplitRows || N < threads * kMinSplitColumns || multiply_adds < kMinSplitMultiplyAdds) {
    block(0, N);
    return;
  }
  const std::int64_t width = (N / threads + 15) / 16 * 16;
  std::exception_ptr failure;
#pragma omp parallel num_threads(threads)
  {
    const int t = omp_get_thread_num();
    const std::int64_t n0 = std::min<std::int64_t>(N, width * t);
    const std::int64_t columns = t == threads - 1 ? N - n0 : std::min(width, N - n0);
    try {
      if (columns > 0) block(n0, columns);
    } catch (...) {
#pragma omp critical(gemm_bf16_failure)
      if (!failure) failure = std::current_exception();
    }
  }
  if (failure) std::rethrow_exception(failure);
}

// B's columns from n0 on: stored rows of B^T where B is transposed, else columns; bf16 is two bytes an element.
GemmBf16Operand columns_from(GemmBf16Operand B, bool trans_b, std::int64_t ldb, std::int64_t n0) {
  const std::int64_t offset = trans_b ? n0 * ldb : n0;
  const auto* bytes = static_cast<const std::uint8_t*>(B.data);
  return {bytes + offset * (B.is_bf16 ? 2 : 4), B.is_bf16};
}

}  // namespace

void gemm_bf16(bool trans_a, bool trans_b, std::int64_t M, std::int64_t N, std::int64_t K, float alpha,
               GemmBf16Operand A, std::int64_t lda, GemmBf16Operand B, std::int64_t ldb, float beta, float* C,
               std::int64_t ldc) {
  if (M == 0 || N == 0) return;
  DT_CHECK(alpha == 1.0f && (beta == 0.0f || beta == 1.0f), "gemm_bf16 takes alpha 1 and beta 0 or 1, got {} and {}",
           alpha, beta);
  if (K == 0) {  // no products: C keeps beta * C
    if (beta == 0.0f) {
      for (std::int64_t m = 0; m < M; ++m)
        for (std::int64_t n = 0; n < N; ++n) C[m * ldc + n] = 0.0f;
    }
    return;
  }
  over_column_blocks(M, N, K, [&](std::int64_t n0, std::int64_t columns) {
    const cpu::CacheKey key{{static_cast<std::int64_t>(cpu::OpTag::kMatmulBf16), trans_a ? 1 : 0, trans_b ? 1 : 0, M,
                             columns, K, lda, ldb, ldc, beta != 0.0f ? 1 : 0, A.is_bf16 ? 1 : 0, B.is_bf16 ? 1 : 0}};
    const auto e = cpu::cached<MatmulBf16Entry>(
        key, [&] { return build(trans_a, trans_b, M, columns, K, A.is_bf16, lda, B.is_bf16, ldb, ldc, beta != 0.0f); });
    run(*e, A, columns_from(B, trans_b, ldb, n0), C + n0);
  });
}

void gemm_bf16_scaled_to_bf16(bool trans_a, bool trans_b, std::int64_t M, std::int64_t N, std::int64_t K,
                              GemmBf16Operand A, std::int64_t lda, GemmBf16Operand B, std::int64_t ldb, float scale,
                              std::uint16_t* C, std::int64_t ldc) {
  if (M == 0 || N == 0) return;
  DT_CHECK(K > 0, "gemm_bf16_scaled_to_bf16 needs products to sum (K = 0)");
  over_column_blocks(M, N, K, [&](std::int64_t n0, std::int64_t columns) {
    const cpu::CacheKey key{{static_cast<std::int64_t>(cpu::OpTag::kMatmulBf16ScaledToBf16), trans_a ? 1 : 0,
                             trans_b ? 1 : 0, M, columns, K, lda, ldb, ldc, A.is_bf16 ? 1 : 0, B.is_bf16 ? 1 : 0,
                             static_cast<std::int64_t>(std::bit_cast<std::uint32_t>(scale))}};
    const auto e = cpu::cached<MatmulBf16Entry>(
        key, [&] { return build(trans_a, trans_b, M, columns, K, A.is_bf16, lda, B.is_bf16, ldb, ldc, false, scale); });
    run(*e, A, columns_from(B, trans_b, ldb, n0), C + n0);
  });
}

}  // namespace dtrain
