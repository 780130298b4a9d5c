#include "tensor/layout.h"

#include <cstring>

namespace dtrain {

bool layout_supports(Layout layout, const Shape& shape) {
  if (layout == Layout::kPlain) return true;
  return shape.rank() == 4 && shape[1] % layout_block(layout) == 0 && shape[1] > 0;
}

void check_layout_supports(Layout layout, const Shape& shape) {
  if (!layout_supports(layout, shape)) {
    throw ShapeError(fmt::format("layout {} needs a 4-D shape with channels a multiple of {}, got {}",
                                 layout_name(layout), layout_block(layout), shape));
  }
}

namespace {

// Between plain and one channel-blocked layout (the other side plain).
template <typename T>
void reorder_typed(const T* src, Layout src_layout, T* dst, Layout dst_layout, const Shape& s) {
  const std::int64_t N = s[0], C = s[1], H = s[2], W = s[3];
  const std::int64_t HW = H * W;
  const bool to_blocked = src_layout == Layout::kPlain;
  const std::int64_t B = layout_block(to_blocked ? dst_layout : src_layout);
#pragma omp parallel for collapse(2) schedule(static)
  for (std::int64_t n = 0; n < N; ++n) {
    for (std::int64_t cb = 0; cb < C / B; ++cb) {
      // One block of B channels: plain rows c = cb*B .. cb*B+B-1, blocked [HW][B].
      const std::int64_t plain_base = (n * C + cb * B) * HW;
      const std::int64_t blocked_base = (n * (C / B) + cb) * HW * B;
      for (std::int64_t i = 0; i < HW; ++i) {
        for (std::int64_t c = 0; c < B; ++c) {
          if (to_blocked) {
            dst[blocked_base + i * B + c] = src[plain_base + c * HW + i];
          } else {
            dst[plain_base + c * HW + i] = src[blocked_base + i * B + c];
          }
        }
      }
    }
  }
}

}  // namespace

void reorder_host(const Tensor& src, Tensor& dst) {
  check_same_shape(src, dst, "reorder");
  DT_CHECK(src.dtype() == dst.dtype(), "reorder needs equal dtypes ({} vs {})", dtype_name(src.dtype()),
           dtype_name(dst.dtype()));
  if (src.layout() == dst.layout()) {
    std::memcpy(dst.raw_data(), src.raw_data(), src.nbytes());
    return;
  }
  check_layout_supports(src.layout(), src.shape());
  check_layout_supports(dst.layout(), src.shape());
  if (src.layout() != Layout::kPlain && dst.layout() != Layout::kPlain) {  // one blocking to another
    Tensor plain = Tensor::empty(src.shape(), src.dtype(), src.device(), Layout::kPlain);
    reorder_host(src, plain);
    reorder_host(plain, dst);
    return;
  }
  switch (dtype_size(src.dtype())) {
    case 2:
      reorder_typed(static_cast<const std::uint16_t*>(src.raw_data()), src.layout(),
                    static_cast<std::uint16_t*>(dst.raw_data()), dst.layout(), src.shape());
      break;
    case 4:
      reorder_typed(static_cast<const std::uint32_t*>(src.raw_data()), src.layout(),
                    static_cast<std::uint32_t*>(dst.raw_data()), dst.layout(), src.shape());
      break;
    case 8:
      reorder_typed(static_cast<const std::uint64_t*>(src.raw_data()), src.layout(),
                    static_cast<std::uint64_t*>(dst.raw_data()), dst.layout(), src.shape());
      break;
    default:
      throw InternalError("reorder: unsupported element size");
  }
}

}  // namespace dtrain
