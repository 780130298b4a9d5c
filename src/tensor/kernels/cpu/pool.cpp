// Pooling on oneDNN, in the input's layout. Max pooling keeps oneDNN's workspace (the position of
// each window's maximum, in oneDNN's own format) in PoolForward::workspace as an f32 tensor of
// the workspace's bytes; the reference backend's workspace is i32 argmax indices, so a backward
// pass handed a workspace it does not recognise recomputes the forward pass. Average pooling
// divides by the full window, padding included (pooling_avg_include_padding). A bf16 activation
// (Backend::relu_forward_activation) pools in bf16 to a bf16 output (exact for max pooling; for
// average pooling the rounding that its bf16 consumer would do). In bf16 precision, max pooling
// in windows that do not overlap also runs its backward pass in bf16, from dy rounded to bf16, in
// half the bytes each way (LeNet's first pooling: 6.4 MB of f32 dx a step at batch 64). It routes
// each dy element as it is to one dx element, and every node that makes a bf16 activation
// (convolution, batch norm, ReLU, addition, pooling) reads its gradient in bf16 or rounds it to
// bf16 first, so dx has the bits its f32 path's would have after that rounding. The other backward
// passes stay f32 (an average's dx, rounded early, would reach a residual sum rounded: ResNet-20's
// loss moved in the third digit), and read the bf16 forward's workspace where its format is the
// f32 one's.
#include "tensor/kernels/cpu/compute_precision.h"
#include "tensor/kernels/cpu/cpu_backend.h"
#include "tensor/kernels/cpu/dnnl_util.h"
#include "tensor/kernels/geometry.h"

namespace dtrain {
namespace {

using cpu::CacheKey;
using cpu::OpTag;
using dnnl::memory;

CacheKey pool_key(OpTag op, const PoolDims& d, Layout layout, PoolKind kind, const Pool2dGeometry& g,
                  memory::data_type type) {
  return {{static_cast<std::int64_t>(op), d.N, d.C, d.H, d.W, static_cast<std::int64_t>(layout),
           static_cast<std::int64_t>(kind), g.kernel_h, g.kernel_w, g.stride_h, g.stride_w, g.pad_h, g.pad_w,
           static_cast<std::int64_t>(type)}};
}

dnnl::algorithm algorithm_of(PoolKind kind) {
  return kind == PoolKind::kMax ? dnnl::algorithm::pooling_max : dnnl::algorithm::pooling_avg_include_padding;
}

dnnl::pooling_forward::primitive_desc forward_pd(const PoolDims& d, Layout layout, PoolKind kind,
                                                 const Pool2dGeometry& g, memory::data_type type) {
  const dnnl::pooling_forward::desc desc(dnnl::prop_kind::forward_training, algorithm_of(kind),
                                         cpu::md4(d.N, d.C, d.H, d.W, layout, type),
                                         cpu::md4(d.N, d.C, d.OH, d.OW, layout, type), {g.stride_h, g.stride_w},
                                         {g.kernel_h, g.kernel_w}, {g.pad_h, g.pad_w}, {g.pad_h, g.pad_w});
  return {desc, cpu::scratchpad_attr(), cpu::dnnl_engine()};
}

struct PoolFwdEntry {
  memory::desc src, dst, workspace, scratch;
  dnnl::pooling_forward prim;
};

struct PoolBwdEntry {
  memory::desc diff_src, diff_dst, workspace, scratch;
  dnnl::pooling_backward prim;
};

Tensor bytes_tensor(std::size_t bytes) {
  return Tensor::empty({static_cast<std::int64_t>((bytes + sizeof(float) - 1) / sizeof(float))}, DType::kF32);
}

memory::data_type pool_type_of(const Tensor& x) {
  return x.dtype() == DType::kBF16 ? memory::data_type::bf16 : memory::data_type::f32;
}

std::shared_ptr<const PoolFwdEntry> forward_entry(const PoolDims& d, Layout layout, PoolKind kind,
                                                  const Pool2dGeometry& g, memory::data_type type) {
  return cpu::cached<PoolFwdEntry>(pool_key(OpTag::kPoolFwd, d, layout, kind, g, type), [&] {
    const auto pd = forward_pd(d, layout, kind, g, type);
    return PoolFwdEntry{pd.src_desc(), pd.dst_desc(), pd.workspace_desc(), pd.scratchpad_desc(),
                        dnnl::pooling_forward(pd)};
  });
}

}  // namespace

PoolForward CpuBackend::pool2d_forward(const Tensor& x, PoolKind kind, const Pool2dGeometry& g) {
  if (!is_f32_or_bf16(x)) return ReferenceBackend::pool2d_forward(x, kind, g);
  const PoolDims d = pool_dims(x.shape(), g);
  const Layout layout = x.layout();
  const auto e = forward_entry(d, layout, kind, g, pool_type_of(x));
  PoolForward out{Tensor::empty({d.N, d.C, d.OH, d.OW}, x.dtype(), Device::cpu(), layout), Tensor()};
  std::unordered_map<int, memory> args{{DNNL_ARG_SRC, cpu::mem(e->src, x)}, {DNNL_ARG_DST, cpu::mem(e->dst, out.y)}};
  const std::size_t ws_bytes = e->workspace.get_size();
  if (ws_bytes > 0) {
    out.workspace = bytes_tensor(ws_bytes);
    args.emplace(DNNL_ARG_WORKSPACE, cpu::mem(e->workspace, out.workspace));
  }
  cpu::execute(e->prim, e->scratch, std::move(args));
  return out;
}

Tensor CpuBackend::pool2d_backward(const Tensor& dy_in, const Tensor& x, const PoolForward& fwd, PoolKind kind,
                                   const Pool2dGeometry& g) {
  const bool in_bf16 =
      x.dtype() == DType::kBF16 && compute_precision() == ComputePrecision::kBF16 && routes_gradient_as_is(kind, g);
  if (!(is_f32(dy_in) || (in_bf16 && dy_in.dtype() == DType::kBF16)) || !is_f32_or_bf16(x)) {
    return ReferenceBackend::pool2d_backward(f32_operand(dy_in), x, fwd, kind, g);
  }
  const PoolDims d = pool_dims(x.shape(), g);
  if (dy_in.shape() != Shape{d.N, d.C, d.OH, d.OW}) {
    throw ShapeError(fmt::format("pool2d backward: gradient {} does not fit output [{}, {}, {}, {}]", dy_in.shape(),
                                 d.N, d.C, d.OH, d.OW));
  }
  const Layout layout = x.layout();
  const memory::data_type type = in_bf16 ? memory::data_type::bf16 : memory::data_type::f32;
  const auto e = cpu::cached<PoolBwdEntry>(pool_key(OpTag::kPoolBwd, d, layout, kind, g, type), [&] {
    const auto hint = forward_pd(d, layout, kind, g, type);
    const dnnl::pooling_backward::desc desc(algorithm_of(kind), cpu::md4(d.N, d.C, d.H, d.W, layout, type),
                                            cpu::md4(d.N, d.C, d.OH, d.OW, layout, type), {g.stride_h, g.stride_w},
                                            {g.kernel_h, g.kernel_w}, {g.pad_h, g.pad_w}, {g.pad_h, g.pad_w});
    const dnnl::pooling_backward::primitive_desc pd(desc, cpu::scratchpad_attr(), cpu::dnnl_engine(), hint);
    return PoolBwdEntry{pd.diff_src_desc(), pd.diff_dst_desc(), pd.workspace_desc(), pd.scratchpad_desc(),
                        dnnl::pooling_backward(pd)};
  });
  const Tensor dy = in_bf16 ? as_bf16(dy_in.to_layout(layout)) : dy_in.to_layout(layout);
  Tensor dx = Tensor::empty(x.shape(), in_bf16 ? DType::kBF16 : DType::kF32, Device::cpu(), layout);
  std::unordered_map<int, memory> args{{DNNL_ARG_DIFF_DST, cpu::mem(e->diff_dst, dy)},
                                       {DNNL_ARG_DIFF_SRC, cpu::mem(e->diff_src, dx)}};
  const std::size_t ws_bytes = e->workspace.get_size();
  Tensor ws;
  if (ws_bytes > 0) {
    ws = fwd.workspace;
    // The forward ran elsewhere (reference kernels), or on a bf16 x while this backward runs the
    // f32 primitive, whose workspace may have another format.
    const bool ws_fits = x.dtype() == DType::kF32 || in_bf16 ||
                         forward_entry(d, layout, kind, g, pool_type_of(x))->workspace == e->workspace;
    if (!ws_fits || !ws.defined() || ws.dtype() != DType::kF32 || ws.nbytes() < ws_bytes) {
      ws = pool2d_forward(in_bf16 ? x : x.to(DType::kF32), kind, g).workspace;
    }
    args.emplace(DNNL_ARG_WORKSPACE, cpu::mem(e->workspace, ws));
  }
  cpu::execute(e->prim, e->scratch, std::move(args));
  return dx;
}

}  // namespace dtrain
