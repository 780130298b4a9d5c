// Batch normalisation on oneDNN, in the input's layout ([N, C] inputs run as [N, C, 1, 1]).
// Training forward returns oneDNN's batch mean and biased variance (divided by N*H*W, as the
// reference defines it); inference uses the given statistics (use_global_stats); backward
// computes dx, dgamma (diff scale) and dbeta (diff shift) from the saved batch statistics.
// Training in bf16 compute precision also runs on a bf16 x (a bf16 convolution's output): oneDNN's
// bf16 kernels read and write bf16 data (y forward; dy, rounded to bf16 where it comes in f32, and
// dx backward) with f32 statistics, parameters and sums; half the bytes of f32, which batch norm's
// two passes each way are bound by ([256, 16, 32, 32]: forward and backward 1.3 ms in bf16, 3.2 ms
// in f32, one core). In f32 precision a bf16 x is widened first.
#include <bit>
#include <cstring>

#include "tensor/kernels/cpu/compute_precision.h"
#include "tensor/kernels/cpu/cpu_backend.h"
#include "tensor/kernels/cpu/dnnl_util.h"

namespace dtrain {
namespace {

using cpu::CacheKey;
using cpu::OpTag;
using dnnl::memory;
using dnnl::normalization_flags;

void check_norm(const Tensor& x, const Tensor& gamma) {
  if ((x.dim() != 2 && x.dim() != 4) || gamma.numel() != x.size(1)) {
    throw ShapeError(fmt::format("batch_norm: input {} does not fit {} channel parameters", x.shape(), gamma.numel()));
  }
}

CacheKey norm_key(OpTag op, const Tensor& x, double eps) {
  const std::int64_t h = x.dim() == 4 ? x.size(2) : 1, w = x.dim() == 4 ? x.size(3) : 1;
  return {{static_cast<std::int64_t>(op), x.size(0), x.size(1), h, w, static_cast<std::int64_t>(x.layout()),
           static_cast<std::int64_t>(std::bit_cast<std::uint32_t>(static_cast<float>(eps))),
           static_cast<std::int64_t>(x.dtype())}};
}

// Whether x is bf16 data that the bf16 kernels take as it is (in bf16 compute precision only).
bool in_bf16(const Tensor& x) { return x.dtype() == DType::kBF16 && compute_precision() == ComputePrecision::kBF16; }

const normalization_flags kScaleShift = normalization_flags::use_scale | normalization_flags::use_shift;

dnnl::batch_normalization_forward::primitive_desc training_pd(const memory::desc& md, double eps) {
  const dnnl::batch_normalization_forward::desc desc(dnnl::prop_kind::forward_training, md, static_cast<float>(eps),
                                                     kScaleShift);
  return {desc, cpu::scratchpad_attr(), cpu::dnnl_engine()};
}

struct NormFwdEntry {
  memory::desc data, stat, scratch;
  dnnl::batch_normalization_forward prim;
};

struct NormBwdEntry {
  memory::desc data, diff_data, stat, scratch;
  dnnl::batch_normalization_backward prim;
};

}  // namespace

BatchNormForward CpuBackend::batch_norm_forward_training(const Tensor& x, const Tensor& gamma, const Tensor& beta,
                                                         double eps) {
  if (!is_f32_or_bf16(x) || !all_f32({&gamma, &beta}))
    return ReferenceBackend::batch_norm_forward_training(f32_operand(x), gamma, beta, eps);
  if (!is_f32(x) && !in_bf16(x)) return batch_norm_forward_training(f32_operand(x), gamma, beta, eps);
  check_norm(x, gamma);
  const std::int64_t C = x.size(1);
  const auto e = cpu::cached<NormFwdEntry>(norm_key(OpTag::kBnFwdTraining, x, eps), [&] {
    const auto pd = training_pd(cpu::md_of(x), eps);
    return NormFwdEntry{pd.src_desc(), pd.mean_desc(), pd.scratchpad_desc(), dnnl::batch_normalization_forward(pd)};
  });
  BatchNormForward out{Tensor::empty_like(x), Tensor::empty({C}, DType::kF32), Tensor::empty({C}, DType::kF32)};
  cpu::execute(e->prim, e->scratch,
               {{DNNL_ARG_SRC, cpu::mem(e->data, x)},
                {DNNL_ARG_DST, cpu::mem(e->data, out.y)},
                {DNNL_ARG_SCALE, cpu::mem(cpu::md1(C), gamma)},
                {DNNL_ARG_SHIFT, cpu::mem(cpu::md1(C), beta)},
                {DNNL_ARG_MEAN, cpu::mem(e->stat, out.mean)},
                {DNNL_ARG_VARIANCE, cpu::mem(e->stat, out.var)}});
  return out;
}

Tensor CpuBackend::batch_norm_forward_inference(const Tensor& x, const Tensor& gamma, const Tensor& beta,
                                                const Tensor& mean, const Tensor& var, double eps) {
  if (!all_f32({&x, &gamma, &beta, &mean, &var})) {
    return ReferenceBackend::batch_norm_forward_inference(f32_operand(x), gamma, beta, mean, var, eps);
  }
  check_norm(x, gamma);
  const std::int64_t C = x.size(1);
  DT_CHECK(mean.numel() == C && var.numel() == C, "batch_norm: statistics {} and {} for {} channels", mean.shape(),
           var.shape(), C);
  const auto e = cpu::cached<NormFwdEntry>(norm_key(OpTag::kBnFwdInference, x, eps), [&] {
    const dnnl::batch_normalization_forward::desc desc(dnnl::prop_kind::forward_inference, cpu::md_of(x),
                                                       static_cast<float>(eps),
                                                       kScaleShift | normalization_flags::use_global_stats);
    const dnnl::batch_normalization_forward::primitive_desc pd(desc, cpu::scratchpad_attr(), cpu::dnnl_engine());
    return NormFwdEntry{pd.src_desc(), pd.mean_desc(), pd.scratchpad_desc(), dnnl::batch_normalization_forward(pd)};
  });
  Tensor y = Tensor::empty_like(x);
  cpu::execute(e->prim, e->scratch,
               {{DNNL_ARG_SRC, cpu::mem(e->data, x)},
                {DNNL_ARG_DST, cpu::mem(e->data, y)},
                {DNNL_ARG_SCALE, cpu::mem(cpu::md1(C), gamma)},
                {DNNL_ARG_SHIFT, cpu::mem(cpu::md1(C), beta)},
                {DNNL_ARG_MEAN, cpu::mem(e->stat, mean)},
                {DNNL_ARG_VARIANCE, cpu::mem(e->stat, var)}});
  return y;
}

BatchNormGrads CpuBackend::batch_norm_backward(const Tensor& dy_in, const Tensor& x, const Tensor& gamma,
                                               const Tensor& mean, const Tensor& var, double eps) {
  if (!is_f32_or_bf16(x) || !is_f32_or_bf16(dy_in) || !all_f32({&gamma, &mean, &var})) {
    return ReferenceBackend::batch_norm_backward(f32_operand(dy_in), f32_operand(x), gamma, mean, var, eps);
  }
  if (!is_f32(x) && !in_bf16(x)) return batch_norm_backward(dy_in, f32_operand(x), gamma, mean, var, eps);
  check_norm(x, gamma);
  check_same_shape(dy_in, x, "batch_norm backward");
  const std::int64_t C = x.size(1);
  const auto e = cpu::cached<NormBwdEntry>(norm_key(OpTag::kBnBwd, x, eps), [&] {
    const memory::desc md = cpu::md_of(x);
    const auto hint = training_pd(md, eps);
    const dnnl::batch_normalization_backward::desc desc(dnnl::prop_kind::backward, md, md, static_cast<float>(eps),
                                                        kScaleShift);
    const dnnl::batch_normalization_backward::primitive_desc pd(desc, cpu::scratchpad_attr(), cpu::dnnl_engine(), hint);
    return NormBwdEntry{pd.src_desc(), pd.diff_src_desc(), pd.mean_desc(), pd.scratchpad_desc(),
                        dnnl::batch_normalization_backward(pd)};
  });
  const Tensor dy_local = dy_in.to_layout(x.layout());
  const Tensor dy = in_bf16(x) ? as_bf16(dy_local) : f32_operand(dy_local);
  BatchNormGrads out{Tensor::empty_like(x), Tensor::empty({C}, DType::kF32), Tensor::empty({C}, DType::kF32)};
  cpu::execute(e->prim, e->scratch,
               {{DNNL_ARG_SRC, cpu::mem(e->data, x)},
                {DNNL_ARG_DIFF_DST, cpu::mem(e->diff_data, dy)},
                {DNNL_ARG_SCALE, cpu::mem(cpu::md1(C), gamma)},
                // oneDNN 2.6 refuses to run backward with use_shift unless a SHIFT argument is
                // given, though the gradients do not depend on it; gamma stands in (only read).
                {DNNL_ARG_SHIFT, cpu::mem(cpu::md1(C), gamma)},
                {DNNL_ARG_MEAN, cpu::mem(e->stat, mean)},
                {DNNL_ARG_VARIANCE, cpu::mem(e->stat, var)},
                {DNNL_ARG_DIFF_SRC, cpu::mem(e->diff_data, out.dx)},
                {DNNL_ARG_DIFF_SCALE, cpu::mem(cpu::md1(C), out.dgamma)},
                {DNNL_ARG_DIFF_SHIFT, cpu::mem(cpu::md1(C), out.dbeta)}});
  return out;
}

}  // namespace dtrain
