// Convolutions on oneDNN. Activations compute in the CPU's channel-blocked layout when their
// channel count fills its blocks (nChw16c for oneDNN's jit:avx512_core kernels, nChw8c for
// jit:avx2; dnnl_util.h; plain nchw falls back to a much slower gemm path) and plain otherwise
// (the 1- or 3-channel input of a network's first layer, which the JIT kernels also read
// directly). Weights live plain [O, C, KH, KW] in tensors (optimizers, allreduce and
// checkpoints see plain) and are reordered into the primitive's preferred blocked format on every
// call; weight gradients are computed blocked and reordered back to plain. Each call looks its
// primitives up in the cache (dnnl_util.h). Where oneDNN has no JIT kernel for dtrain's layouts
// (see Policy below) the primitive runs in formats of its choosing, with reorders at the edges.
// In bf16 (compute_precision.h) each primitive reads bf16 inputs and weights: the reorders at its
// edges round f32 tensors to bf16 on the way in (src and weights forward; diff_dst and weights
// backward data; src and diff_dst backward weights). The forward writes its output in bf16, as
// PyTorch's CPU autocast does: the batch norm or ReLU after it reads bf16 (half the bytes each way).
// The backward outputs, dx and the weight gradients, stay f32 (oneDNN's bf16 training recipe:
// master weights in f32), except a weight gradient asked for in a bf16 wire slot (a scaled
// destination, backend.h: WeightGradInto), which the reorder out of the primitive's format writes
// scaled and rounded. x may arrive in bf16 (a ReLU's output, Backend::relu_forward_activation),
// and so may dy (a bf16 batch norm's backward); a bf16 primitive reads either as it is where
// dtrain's layout is its format, and backward-weights reads the same x. In bf16, backward-weights
// of 16-channel multiples runs dtrain's own kernel (conv_weight_grad_bf16.h) on the same inputs:
// oneDNN's runs this pass at 1.2-1.4x its f32 speed without AMX, where the other passes reach 1.8x.
#include <bit>
#include <string>

#include "tensor/kernels/cpu/compute_precision.h"
#include "tensor/kernels/cpu/conv_weight_grad_bf16.h"
#include "tensor/kernels/cpu/cpu_backend.h"
#include "tensor/kernels/cpu/dnnl_util.h"
#include "tensor/kernels/geometry.h"

namespace dtrain {
namespace {

using cpu::CacheKey;
using cpu::OpTag;
using dnnl::memory;

CacheKey conv_key(OpTag op, const ConvDims& d, const Conv2dGeometry& g, bool bias) {
  return {{static_cast<std::int64_t>(op), d.N, d.C, d.H, d.W, d.O, d.KH, d.KW, g.stride_h, g.stride_w, g.pad_h, g.pad_w,
           bias ? 1 : 0, static_cast<std::int64_t>(compute_precision())}};
}

// How activation tensors are described to oneDNN when a primitive is built. dtrain hands the
// kernels plain tensors for channel counts that do not fill the blocks and blocked ones otherwise;
// for some shapes oneDNN then has only its slow reference kernel (e.g. backward data of a
// 3-channel first layer with plain dx, or anything producing a plain 10-channel output), so the
// primitive is built under the first policy that yields a JIT kernel and tensors are reordered
// between dtrain's layout and the primitive's where they differ (a padded blocked format costs
// one small reorder, the reference kernel costs 100-1000x).
enum class Policy { kNative, kAnyOdd, kAnyAll, kPlainAll };
constexpr Policy kPolicies[] = {Policy::kNative, Policy::kAnyOdd, Policy::kAnyAll, Policy::kPlainAll};

// The data type a primitive reads its inputs and writes its forward output in: bf16 in bf16 runs;
// the backward outputs are always f32.
memory::data_type input_type() {
  return compute_precision() == ComputePrecision::kBF16 ? memory::data_type::bf16 : memory::data_type::f32;
}

memory::desc act_md(std::int64_t n, std::int64_t c, std::int64_t h, std::int64_t w, Policy p,
                    memory::data_type type = memory::data_type::f32) {
  const Layout native = cpu::compute_layout(c);
  const bool blocked = native != Layout::kPlain;
  memory::format_tag tag = cpu::format_tag_of(native);
  if (p == Policy::kPlainAll) tag = memory::format_tag::nchw;
  if ((p == Policy::kAnyOdd && !blocked) || p == Policy::kAnyAll) tag = memory::format_tag::any;
  return {{n, c, h, w}, type, tag};
}
// An input (src forward and backward weights) or an output (diff_src backward data).
memory::desc src_md(const ConvDims& d, Policy p, memory::data_type type) { return act_md(d.N, d.C, d.H, d.W, p, type); }
// An output (dst forward) or an input (diff_dst backward).
memory::desc dst_md(const ConvDims& d, Policy p, memory::data_type type) {
  return act_md(d.N, d.O, d.OH, d.OW, p, type);
}
// dtrain's own layout of the input and output activations; the input may be a bf16 activation
// (Backend::relu_forward_activation), which a bf16 primitive reads as it is where the formats agree.
memory::desc user_src_md(const ConvDims& d, memory::data_type type = memory::data_type::f32) {
  return cpu::md4(d.N, d.C, d.H, d.W, cpu::compute_layout(d.C), type);
}
constexpr auto kBf16 = memory::data_type::bf16;
memory::desc user_dst_md(const ConvDims& d, memory::data_type type = memory::data_type::f32) {
  return cpu::md4(d.N, d.O, d.OH, d.OW, cpu::compute_layout(d.O), type);
}
memory::desc plain_weights_md(const ConvDims& d) {
  return {{d.O, d.C, d.KH, d.KW}, memory::data_type::f32, memory::format_tag::oihw};
}
memory::desc any_weights_md(const ConvDims& d, memory::data_type type) {
  return {{d.O, d.C, d.KH, d.KW}, type, memory::format_tag::any};
}
constexpr auto kF32 = memory::data_type::f32;

// Padding on the far side equals the near side: oneDNN checks (in - k + pl + pr) / s + 1 == out,
// which holds for the floor formula window_output_size uses.
memory::dims strides(const Conv2dGeometry& g) { return {g.stride_h, g.stride_w}; }
memory::dims padding(const Conv2dGeometry& g) { return {g.pad_h, g.pad_w}; }

dnnl::convolution_forward::primitive_desc forward_pd(const ConvDims& d, const Conv2dGeometry& g, bool bias, Policy p) {
  using fwd = dnnl::convolution_forward;
  const fwd::desc desc = bias ? fwd::desc(dnnl::prop_kind::forward_training, dnnl::algorithm::convolution_direct,
                                          src_md(d, p, input_type()), any_weights_md(d, input_type()), cpu::md1(d.O),
                                          dst_md(d, p, input_type()), strides(g), padding(g), padding(g))
                              : fwd::desc(dnnl::prop_kind::forward_training, dnnl::algorithm::convolution_direct,
                                          src_md(d, p, input_type()), any_weights_md(d, input_type()),
                                          dst_md(d, p, input_type()), strides(g), padding(g), padding(g));
  return {desc, cpu::scratchpad_attr(), cpu::dnnl_engine()};
}

int quality(const char* impl) {
  const std::string s(impl);
  if (s.rfind("ref", 0) == 0) return 0;
  if (s.find("gemm") != std::string::npos) return 1;
  return 2;
}

// Builds the primitive descriptor under each policy in turn and keeps the first with a JIT
// kernel (else the first GEMM-based one, else the native policy's).
template <typename Pd, typename Build>
Pd best_pd(Build&& build) {
  Pd best;
  int best_q = -1;
  for (Policy p : kPolicies) {
    Pd pd;
    try {
      pd = build(p);
    } catch (const dnnl::error&) {
      continue;
    }
    const int q = quality(pd.impl_info_str());
    if (q > best_q) {
      best = pd;
      best_q = q;
    }
    if (q == 2) break;
  }
  if (best_q < 0) throw InternalError("conv2d: oneDNN has no implementation for this problem");
  return best;
}

// Whether `to` is `from` with its f32 elements stored as bf16: the same dims, padding and format.
bool only_rounds(const memory::desc& from, const memory::desc& to) {
  if (from.data.data_type != dnnl_f32 || to.data.data_type != dnnl_bf16) return false;
  memory::desc as_f32 = to;
  as_f32.data.data_type = dnnl_f32;
  return as_f32 == from;
}

// A reorder between two formats of one tensor, or none when they are equal. One that only rounds
// f32 to bf16 in place of the format runs round_to_bf16 (compute_precision.h) instead of oneDNN's
// reorder, which took 2-3x as long on some activation shapes.
struct Reorder {
  bool needed = false, rounds = false;
  memory::desc src, dst;
  dnnl::reorder prim;
  memory::desc scratch;

  Reorder() = default;
  Reorder(const memory::desc& from, const memory::desc& to)
      : needed(from != to), rounds(only_rounds(from, to)), src(from), dst(to) {
    if (!needed || rounds) return;
    dnnl::reorder::primitive_desc pd(cpu::dnnl_engine(), from, cpu::dnnl_engine(), to, cpu::scratchpad_attr());
    prim = dnnl::reorder(pd);
    scratch = pd.scratchpad_desc();
  }
  void run(void* from, void* to) const {
    if (rounds) {
      round_to_bf16(static_cast<const float*>(from), static_cast<std::uint16_t*>(to),
                    static_cast<std::int64_t>(src.get_size() / sizeof(float)));
      return;
    }
    cpu::execute(prim, scratch, {{DNNL_ARG_FROM, cpu::mem(src, from)}, {DNNL_ARG_TO, cpu::mem(dst, to)}});
  }
};

// Storage for a tensor in a primitive's format (whose size may include padding).
Tensor buffer_for(const memory::desc& md) {
  const auto floats = static_cast<std::int64_t>((md.get_size() + sizeof(float) - 1) / sizeof(float));
  return Tensor::empty({floats}, DType::kF32);
}

// An input the primitive reads: `t` itself, or a reordered copy in the primitive's format.
Tensor bind_input(const Reorder& r, const Tensor& t) {
  if (!r.needed) return t;
  Tensor b = buffer_for(r.dst);
  r.run(t.raw_data(), b.raw_data());
  return b;
}

// An output the primitive writes: `t` itself, or a buffer reordered into `t` by finish_output.
Tensor bind_output(const Reorder& r, const Tensor& t) { return r.needed ? buffer_for(r.src) : t; }
void finish_output(const Reorder& r, const Tensor& buffer, const Tensor& t) {
  if (r.needed) r.run(buffer.raw_data(), t.raw_data());
}

struct ConvFwdEntry {
  memory::desc src, dst, weights, bias, scratch;
  dnnl::convolution_forward prim;
  Reorder src_in, src_in_bf16, weights_in, dst_out;
  // The reorder that brings x, f32 or bf16, into the primitive's src format.
  const Reorder& src_reorder(const Tensor& x) const { return x.dtype() == DType::kBF16 ? src_in_bf16 : src_in; }
};

struct BwdDataEntry {
  memory::desc diff_src, diff_dst, weights, scratch;
  dnnl::convolution_backward_data prim;
  Reorder diff_dst_in, diff_dst_in_bf16, weights_in, diff_src_out;
  const Reorder& dy_reorder(const Tensor& dy) const {
    return dy.dtype() == DType::kBF16 ? diff_dst_in_bf16 : diff_dst_in;
  }
};

// Backward weights on oneDNN's primitive, or in bf16 on dtrain's own kernel where it applies
// (conv_weight_grad_bf16.h: `own`), which reads x and dy in dtrain's nChw16c layout in bf16.
struct BwdWeightsEntry {
  memory::desc src, diff_dst, diff_weights, diff_bias, scratch;
  dnnl::convolution_backward_weights prim;
  Reorder src_in, src_in_bf16, diff_dst_in, diff_dst_in_bf16, diff_weights_out;
  bool own = false;
  const Reorder& src_reorder(const Tensor& x) const { return x.dtype() == DType::kBF16 ? src_in_bf16 : src_in; }
  const Reorder& dy_reorder(const Tensor& dy) const {
    return dy.dtype() == DType::kBF16 ? diff_dst_in_bf16 : diff_dst_in;
  }
};

void check_weights(const Tensor& w) {
  DT_CHECK(w.layout() == Layout::kPlain, "conv2d weights must be plain, got {}", w.describe());
}

}  // namespace

namespace {

std::shared_ptr<const ConvFwdEntry> forward_entry(const ConvDims& d, const Conv2dGeometry& g, bool bias) {
  return cpu::cached<ConvFwdEntry>(conv_key(OpTag::kConvFwd, d, g, bias), [&] {
    const auto pd =
        best_pd<dnnl::convolution_forward::primitive_desc>([&](Policy p) { return forward_pd(d, g, bias, p); });
    return ConvFwdEntry{pd.src_desc(),
                        pd.dst_desc(),
                        pd.weights_desc(),
                        bias ? pd.bias_desc() : memory::desc(),
                        pd.scratchpad_desc(),
                        dnnl::convolution_forward(pd),
                        Reorder(user_src_md(d), pd.src_desc()),
                        Reorder(user_src_md(d, kBf16), pd.src_desc()),
                        Reorder(plain_weights_md(d), pd.weights_desc()),
                        Reorder(pd.dst_desc(), user_dst_md(d, input_type()))};
  });
}

// The forward pass; in bf16, `kept` (when given) receives x rounded to bf16 in the primitive's
// src format, which the backward-weights primitive reads too (unless x is a bf16 activation that
// the primitive reads as it is: the backward reads x itself then).
Tensor run_forward(const Tensor& x_in, const Tensor& w, const Tensor* b, const Conv2dGeometry& g, Tensor* kept) {
  check_weights(w);
  const ConvDims d = conv_dims(x_in.shape(), w.shape(), g);
  if (b != nullptr && b->numel() != d.O) {
    throw ShapeError(fmt::format("conv2d: bias {} does not fit {} output channels", b->shape(), d.O));
  }
  const bool bias = b != nullptr;
  const auto e = forward_entry(d, g, bias);
  const Tensor x_local = x_in.to_layout(cpu::compute_layout(d.C));
  const Reorder& src_in = e->src_reorder(x_local);
  const Tensor x = bind_input(src_in, x_local);
  if (kept != nullptr && compute_precision() == ComputePrecision::kBF16 && src_in.needed) *kept = x;
  const Tensor wb = bind_input(e->weights_in, w);
  const DType out_type = compute_precision() == ComputePrecision::kBF16 ? DType::kBF16 : DType::kF32;
  Tensor y = Tensor::empty({d.N, d.O, d.OH, d.OW}, out_type, Device::cpu(), cpu::compute_layout(d.O));
  const Tensor yb = bind_output(e->dst_out, y);
  std::unordered_map<int, memory> args{{DNNL_ARG_SRC, cpu::mem(e->src, x)},
                                       {DNNL_ARG_WEIGHTS, cpu::mem(e->weights, wb)},
                                       {DNNL_ARG_DST, cpu::mem(e->dst, yb)}};
  if (bias) args.emplace(DNNL_ARG_BIAS, cpu::mem(e->bias, *b));
  cpu::execute(e->prim, e->scratch, std::move(args));
  finish_output(e->dst_out, yb, y);
  return y;
}

}  // namespace

Tensor CpuBackend::conv2d_forward(const Tensor& x, const Tensor& w, const Tensor* b, const Conv2dGeometry& g) {
  if (!is_f32_or_bf16(x) || !is_f32(w) || (b != nullptr && !is_f32(*b)))
    return ReferenceBackend::conv2d_forward(x, w, b, g);
  return run_forward(x, w, b, g, nullptr);
}

Tensor CpuBackend::conv2d_forward_keeping(const Tensor& x, const Tensor& w, const Tensor* b, const Conv2dGeometry& g,
                                          Tensor& kept) {
  kept = Tensor();
  if (!is_f32_or_bf16(x) || !is_f32(w) || (b != nullptr && !is_f32(*b)))
    return ReferenceBackend::conv2d_forward(x, w, b, g);
  return run_forward(x, w, b, g, &kept);
}

namespace {

void check_dy(const Tensor& dy, const ConvDims& d) {
  if (dy.shape() != Shape{d.N, d.O, d.OH, d.OW}) {
    throw ShapeError(fmt::format("conv2d backward: gradient {} does not fit output [{}, {}, {}, {}]", dy.shape(), d.N,
                                 d.O, d.OH, d.OW));
  }
}

std::shared_ptr<const BwdDataEntry> backward_data_entry(const ConvDims& d, const Conv2dGeometry& g) {
  return cpu::cached<BwdDataEntry>(conv_key(OpTag::kConvBwdData, d, g, false), [&] {
    using bwd = dnnl::convolution_backward_data;
    const auto pd = best_pd<bwd::primitive_desc>([&](Policy p) {
      const bwd::desc desc(dnnl::algorithm::convolution_direct, src_md(d, p, kF32), any_weights_md(d, input_type()),
                           dst_md(d, p, input_type()), strides(g), padding(g), padding(g));
      return bwd::primitive_desc(desc, cpu::scratchpad_attr(), cpu::dnnl_engine(), forward_pd(d, g, false, p));
    });
    return BwdDataEntry{pd.diff_src_desc(),
                        pd.diff_dst_desc(),
                        pd.weights_desc(),
                        pd.scratchpad_desc(),
                        bwd(pd),
                        Reorder(user_dst_md(d), pd.diff_dst_desc()),
                        Reorder(user_dst_md(d, kBf16), pd.diff_dst_desc()),
                        Reorder(plain_weights_md(d), pd.weights_desc()),
                        Reorder(pd.diff_src_desc(), user_src_md(d))};
  });
}

// Whether dtrain's bf16 weight-gradient kernel runs this problem: bf16 precision, x and dy in
// nChw16c (the layout oneDNN's AVX-512 kernels fix for 16-channel multiples), and a machine and
// width it covers (conv_weight_grad_bf16.h).
bool own_bf16_weight_grad(const ConvDims& d) {
  return compute_precision() == ComputePrecision::kBF16 && cpu::compute_layout(d.C) == Layout::kNChw16c &&
         cpu::compute_layout(d.O) == Layout::kNChw16c && cpu::bf16_weight_grad_applies(d);
}

std::shared_ptr<const BwdWeightsEntry> backward_weights_entry(const ConvDims& d, const Conv2dGeometry& g,
                                                              bool with_bias) {
  CacheKey key = conv_key(OpTag::kConvBwdWeights, d, g, with_bias);
  const bool own_kernel = own_bf16_weight_grad(d);
  key.v.push_back(own_kernel ? 1 : 0);
  return cpu::cached<BwdWeightsEntry>(key, [&] {
    if (own_kernel) {
      const memory::desc src = user_src_md(d, kBf16), diff_dst = user_dst_md(d, kBf16);
      BwdWeightsEntry own;
      own.src = src;
      own.diff_dst = diff_dst;
      own.src_in = Reorder(user_src_md(d), src);
      own.src_in_bf16 = Reorder(src, src);
      own.diff_dst_in = Reorder(user_dst_md(d), diff_dst);
      own.diff_dst_in_bf16 = Reorder(diff_dst, diff_dst);
      own.own = true;
      return own;
    }
    using bwd = dnnl::convolution_backward_weights;
    const auto pd = best_pd<bwd::primitive_desc>([&](Policy p) {
      const memory::desc src = src_md(d, p, input_type()), diff_dst = dst_md(d, p, input_type());
      const bwd::desc desc = with_bias ? bwd::desc(dnnl::algorithm::convolution_direct, src, any_weights_md(d, kF32),
                                                   cpu::md1(d.O), diff_dst, strides(g), padding(g), padding(g))
                                       : bwd::desc(dnnl::algorithm::convolution_direct, src, any_weights_md(d, kF32),
                                                   diff_dst, strides(g), padding(g), padding(g));
      return bwd::primitive_desc(desc, cpu::scratchpad_attr(), cpu::dnnl_engine(), forward_pd(d, g, with_bias, p));
    });
    return BwdWeightsEntry{pd.src_desc(),
                           pd.diff_dst_desc(),
                           pd.diff_weights_desc(),
                           with_bias ? pd.diff_bias_desc() : memory::desc(),
                           pd.scratchpad_desc(),
                           bwd(pd),
                           Reorder(user_src_md(d), pd.src_desc()),
                           Reorder(user_src_md(d, kBf16), pd.src_desc()),
                           Reorder(user_dst_md(d), pd.diff_dst_desc()),
                           Reorder(user_dst_md(d, kBf16), pd.diff_dst_desc()),
                           Reorder(pd.diff_weights_desc(), plain_weights_md(d))};
  });
}

// dx from dy already in the primitive's diff_dst format (`dy`).
Tensor run_backward_data(const BwdDataEntry& e, const Tensor& dy, const Tensor& w, const ConvDims& d,
                         const Shape& x_shape, Layout x_layout) {
  const Tensor wb = bind_input(e.weights_in, w);
  Tensor dx = Tensor::empty(x_shape, DType::kF32, Device::cpu(), cpu::compute_layout(d.C));
  const Tensor dxb = bind_output(e.diff_src_out, dx);
  cpu::execute(e.prim, e.scratch,
               {{DNNL_ARG_DIFF_DST, cpu::mem(e.diff_dst, dy)},
                {DNNL_ARG_WEIGHTS, cpu::mem(e.weights, wb)},
                {DNNL_ARG_DIFF_SRC, cpu::mem(e.diff_src, dxb)}});
  finish_output(e.diff_src_out, dxb, dx);
  return dx.to_layout(x_layout);
}

// The reorder that takes the f32 weight gradient out of the primitive's format into a plain bf16
// destination, times `scale`: oneDNN scales the f32 value, then rounds it to the nearest bf16.
struct ScaledWeightGradOut {
  memory::desc dst, scratch;
  dnnl::reorder prim;
};

std::shared_ptr<const ScaledWeightGradOut> scaled_weight_grad_out(const ConvDims& d, const Conv2dGeometry& g,
                                                                  bool with_bias, const memory::desc& diff_weights,
                                                                  float scale) {
  CacheKey key = conv_key(OpTag::kConvWeightGradToBf16, d, g, with_bias);
  key.v.push_back(static_cast<std::int64_t>(std::bit_cast<std::uint32_t>(scale)));
  return cpu::cached<ScaledWeightGradOut>(key, [&] {
    dnnl::primitive_attr attr = cpu::scratchpad_attr();
    attr.set_output_scales(0, {scale});
    const memory::desc plain_bf16({d.O, d.C, d.KH, d.KW}, kBf16, memory::format_tag::oihw);
    const dnnl::reorder::primitive_desc pd(cpu::dnnl_engine(), diff_weights, cpu::dnnl_engine(), plain_bf16, attr);
    return ScaledWeightGradOut{plain_bf16, pd.scratchpad_desc(), dnnl::reorder(pd)};
  });
}

// dW (and db) from dy and x already in the primitive's diff_dst and src formats; dW into a bf16
// scaled destination when `scaled_into` is given (Backend::conv2d_backward), in the reorder out of
// the primitive's format that an f32 dW makes anyway (dtrain's own kernel writes it as it sums).
WeightGrads run_backward_weights(const BwdWeightsEntry& e, const Tensor& dy, const Tensor& x, const ConvDims& d,
                                 const Conv2dGeometry& g, const Shape& w_shape, bool with_bias,
                                 const Tensor* scaled_into = nullptr, float scale = 1.0f) {
  WeightGrads out{scaled_into != nullptr ? *scaled_into : Tensor::empty(w_shape, DType::kF32),
                  with_bias ? Tensor::empty({d.O}, DType::kF32) : Tensor()};
  if (e.own) {
    cpu::bf16_weight_grad(d, g, static_cast<const std::uint16_t*>(x.raw_data()),
                          static_cast<const std::uint16_t*>(dy.raw_data()),
                          scaled_into != nullptr ? nullptr : out.dw.data<float>(),
                          scaled_into != nullptr ? static_cast<std::uint16_t*>(out.dw.raw_data()) : nullptr, scale,
                          with_bias ? out.db.data<float>() : nullptr);
    return out;
  }
  const auto to_bf16 =
      scaled_into != nullptr ? scaled_weight_grad_out(d, g, with_bias, e.diff_weights, scale) : nullptr;
  const Tensor dwb = to_bf16 ? buffer_for(e.diff_weights) : bind_output(e.diff_weights_out, out.dw);
  std::unordered_map<int, memory> args{{DNNL_ARG_SRC, cpu::mem(e.src, x)},
                                       {DNNL_ARG_DIFF_DST, cpu::mem(e.diff_dst, dy)},
                                       {DNNL_ARG_DIFF_WEIGHTS, cpu::mem(e.diff_weights, dwb)}};
  if (with_bias) args.emplace(DNNL_ARG_DIFF_BIAS, cpu::mem(e.diff_bias, out.db));
  cpu::execute(e.prim, e.scratch, std::move(args));
  if (to_bf16) {
    cpu::execute(to_bf16->prim, to_bf16->scratch,
                 {{DNNL_ARG_FROM, cpu::mem(e.diff_weights, dwb.raw_data())},
                  {DNNL_ARG_TO, cpu::mem(to_bf16->dst, out.dw.raw_data())}});
  } else {
    finish_output(e.diff_weights_out, dwb, out.dw);
  }
  return out;
}

}  // namespace

Tensor CpuBackend::conv2d_backward_data(const Tensor& dy_in, const Tensor& w, const Shape& x_shape, Layout x_layout,
                                        const Conv2dGeometry& g) {
  if (!is_f32_or_bf16(dy_in) || !is_f32(w))
    return ReferenceBackend::conv2d_backward_data(f32_operand(dy_in), w, x_shape, x_layout, g);
  check_weights(w);
  const ConvDims d = conv_dims(x_shape, w.shape(), g);
  check_dy(dy_in, d);
  const auto e = backward_data_entry(d, g);
  const Tensor dy_local = dy_in.to_layout(cpu::compute_layout(d.O));
  const Tensor dy = bind_input(e->dy_reorder(dy_local), dy_local);
  return run_backward_data(*e, dy, w, d, x_shape, x_layout);
}

WeightGrads CpuBackend::conv2d_backward_weights(const Tensor& dy_in, const Tensor& x_in, const Shape& w_shape,
                                                bool with_bias, const Conv2dGeometry& g) {
  if (!is_f32_or_bf16(dy_in) || !is_f32_or_bf16(x_in))
    return ReferenceBackend::conv2d_backward_weights(f32_operand(dy_in), x_in, w_shape, with_bias, g);
  const ConvDims d = conv_dims(x_in.shape(), w_shape, g);
  check_dy(dy_in, d);
  const auto e = backward_weights_entry(d, g, with_bias);
  const Tensor dy_local = dy_in.to_layout(cpu::compute_layout(d.O));
  const Tensor dy = bind_input(e->dy_reorder(dy_local), dy_local);
  const Tensor x_local = x_in.to_layout(cpu::compute_layout(d.C));
  const Tensor x = bind_input(e->src_reorder(x_local), x_local);
  return run_backward_weights(*e, dy, x, d, g, w_shape, with_bias);
}

// Both passes convert dy from dtrain's layout to their primitive's diff_dst format (in bf16,
// rounding an f32 dy; a bf16 one is read as it is where the formats agree); where the two formats are the same, which
// they are for every JIT kernel, dy is converted once. x comes from the forward pass (`kept`) where its format is the
// one backward-weights reads.
ConvGrads CpuBackend::conv2d_backward(const Tensor& dy_in, const Tensor& x_in, const Tensor& kept, const Tensor& w,
                                      bool need_dx, bool with_bias, const Conv2dGeometry& g,
                                      const WeightGradInto& into) {
  if (!is_f32_or_bf16(dy_in) || !is_f32_or_bf16(x_in) || !is_f32(w))
    return Backend::conv2d_backward(f32_operand(dy_in), x_in, kept, w, need_dx, with_bias, g, into);
  check_weights(w);
  const ConvDims d = conv_dims(x_in.shape(), w.shape(), g);
  check_dy(dy_in, d);
  const Tensor dy_local = dy_in.to_layout(cpu::compute_layout(d.O));
  const auto ew = backward_weights_entry(d, g, with_bias);
  const Tensor dy_w = bind_input(ew->dy_reorder(dy_local), dy_local);
  ConvGrads out;
  if (need_dx) {
    const auto ed = backward_data_entry(d, g);
    const Tensor dy_d = ed->diff_dst == ew->diff_dst ? dy_w : bind_input(ed->dy_reorder(dy_local), dy_local);
    out.dx = run_backward_data(*ed, dy_d, w, d, x_in.shape(), x_in.layout());
  }
  const bool use_kept = kept.defined() && forward_entry(d, g, with_bias)->src == ew->src;
  const Tensor x_local = use_kept ? Tensor() : x_in.to_layout(cpu::compute_layout(d.C));
  const Tensor x = use_kept ? kept : bind_input(ew->src_reorder(x_local), x_local);
  const bool scaled = writes_scaled_bf16(into, w.shape());
  out.weights =
      run_backward_weights(*ew, dy_w, x, d, g, w.shape(), with_bias, scaled ? into.scaled : nullptr, into.scale);
  return out;
}

}  // namespace dtrain
