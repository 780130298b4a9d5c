// gemm_bf16 (gemm.h) on oneDNN's matmul primitive: op(A) and op(B) reordered from f32 or bf16 (as
// stored, transposed or not) into dense bf16 (no reorder for a dense bf16 operand), multiplied on the CPU's bf16 dot
// products with f32 sums into C (beta != 0: oneDNN's sum post-op adds C's old value). The two reorders and the matmul
// are built once per shape (dnnl_util.h's cache).
#include <dnnl.hpp>

#include "core/error.h"
#include "tensor/kernels/cpu/dnnl_util.h"
#include "tensor/kernels/cpu/gemm.h"

namespace dtrain {
namespace {

using dnnl::memory;

struct MatmulBf16Entry {
  memory::desc a_stored, a_bf16, b_stored, b_bf16, c, scratch, a_scratch, b_scratch;
  dnnl::matmul prim;
  dnnl::reorder a_round, b_round;
  bool round_a = true, round_b = true;
};

// [rows, cols] as stored: row-major with leading dimension ld, or its transpose.
memory::desc stored_md(std::int64_t rows, std::int64_t cols, bool transposed, std::int64_t ld, bool bf16) {
  return {{rows, cols},
          bf16 ? memory::data_type::bf16 : memory::data_type::f32,
          transposed ? memory::dims{1, ld} : memory::dims{ld, 1}};
}

MatmulBf16Entry build(bool trans_a, bool trans_b, std::int64_t M, std::int64_t N, std::int64_t K, bool a_bf16,
                      std::int64_t lda, bool b_bf16, std::int64_t ldb, std::int64_t ldc, bool accumulate) {
  MatmulBf16Entry e;
  e.a_stored = stored_md(M, K, trans_a, lda, a_bf16);
  e.b_stored = stored_md(K, N, trans_b, ldb, b_bf16);
  e.a_bf16 = memory::desc({M, K}, memory::data_type::bf16, memory::format_tag::ab);
  e.b_bf16 = memory::desc({K, N}, memory::data_type::bf16, memory::format_tag::ab);
  e.c = memory::desc({M, N}, memory::data_type::f32, memory::dims{ldc, 1});
  dnnl::primitive_attr attr = cpu::scratchpad_attr();
  if (accumulate) {
    dnnl::post_ops sum;
    sum.append_sum(1.0f);
    attr.set_post_ops(sum);
  }
  const dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(e.a_bf16, e.b_bf16, e.c), attr, cpu::dnnl_engine());
  e.prim = dnnl::matmul(pd);
  e.scratch = pd.scratchpad_desc();
  e.round_a = e.a_stored != e.a_bf16;
  e.round_b = e.b_stored != e.b_bf16;
  if (e.round_a) {
    const dnnl::reorder::primitive_desc ra(cpu::dnnl_engine(), e.a_stored, cpu::dnnl_engine(), e.a_bf16,
                                           cpu::scratchpad_attr());
    e.a_round = dnnl::reorder(ra);
    e.a_scratch = ra.scratchpad_desc();
  }
  if (e.round_b) {
    const dnnl::reorder::primitive_desc rb(cpu::dnnl_engine(), e.b_stored, cpu::dnnl_engine(), e.b_bf16,
                                           cpu::scratchpad_attr());
    e.b_round = dnnl::reorder(rb);
    e.b_scratch = rb.scratchpad_desc();
  }
  return e;
}

// An operand in the matmul's dense bf16 format: `x` itself where no reorder is needed, else its
// rounded copy in `copy` (two bytes an element, in an f32 tensor of half as many).
void* dense_bf16(const dnnl::reorder& round, const memory::desc& scratch, const memory::desc& from,
                 const memory::desc& to, bool needed, GemmBf16Operand x, std::int64_t elements, Tensor& copy) {
  if (!needed) return const_cast<void*>(x.data);
  copy = Tensor::empty({(elements + 1) / 2}, DType::kF32);
  cpu::execute(
      round, scratch,
      {{DNNL_ARG_FROM, cpu::mem(from, const_cast<void*>(x.data))}, {DNNL_ARG_TO, cpu::mem(to, copy.raw_data())}});
  return copy.raw_data();
}

}  // namespace

void gemm_bf16(bool trans_a, bool trans_b, std::int64_t M, std::int64_t N, std::int64_t K, float alpha,
               GemmBf16Operand A, std::int64_t lda, GemmBf16Operand B, std::int64_t ldb, float beta, float* C,
               std::int64_t ldc) {
  if (M == 0 || N == 0) return;
  DT_CHECK(alpha == 1.0f && (beta == 0.0f || beta == 1.0f), "gemm_bf16 takes alpha 1 and beta 0 or 1, got {} and {}",
           alpha, beta);
  if (K == 0) {  // no products: C keeps beta * C
    if (beta == 0.0f)
      for (std::int64_t m = 0; m < M; ++m)
        for (std::int64_t n = 0; n < N; ++n) C[m * ldc + n] = 0.0f;
    return;
  }
  const cpu::CacheKey key{{static_cast<std::int64_t>(cpu::OpTag::kMatmulBf16), trans_a ? 1 : 0, trans_b ? 1 : 0, M, N,
                           K, lda, ldb, ldc, beta != 0.0f ? 1 : 0, A.is_bf16 ? 1 : 0, B.is_bf16 ? 1 : 0}};
  const auto e = cpu::cached<MatmulBf16Entry>(
      key, [&] { return build(trans_a, trans_b, M, N, K, A.is_bf16, lda, B.is_bf16, ldb, ldc, beta != 0.0f); });
  Tensor a_copy, b_copy;
  void* a = dense_bf16(e->a_round, e->a_scratch, e->a_stored, e->a_bf16, e->round_a, A, M * K, a_copy);
  void* b = dense_bf16(e->b_round, e->b_scratch, e->b_stored, e->b_bf16, e->round_b, B, K * N, b_copy);
  cpu::execute(e->prim, e->scratch,
               {{DNNL_ARG_SRC, cpu::mem(e->a_bf16, a)},
                {DNNL_ARG_WEIGHTS, cpu::mem(e->b_bf16, b)},
                {DNNL_ARG_DST, cpu::mem(e->c, C)}});
}

}  // namespace dtrain
