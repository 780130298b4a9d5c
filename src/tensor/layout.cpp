#include "tensor/layout.h"

#include <cstring>

namespace dtrain {

bool layout_supports(Layout layout, const Shape& shape) {
  if (layout == Layout::kPlain) return true;
  return shape.rank() == 4 && shape[1] % 16 == 0 && shape[1] > 0;
}

namespace {

template <typename T>
void reorder_typed(const T* src, Layout src_layout, T* dst, Layout dst_layout, const Shape& s) {
  const std::int64_t N = s[0], C = s[1], H = s[2], W = s[3];
  const std::int64_t HW = H * W;
#pragma omp parallel for collapse(2) schedule(static)
  for (std::int64_t n = 0; n < N; ++n) {
    for (std::int64_t cb = 0; cb < C / 16; ++cb) {
      // One block of 16 channels: plain rows c = cb*16 .. cb*16+15, blocked [HW][16].
      const std::int64_t plain_base = (n * C + cb * 16) * HW;
      const std::int64_t blocked_base = (n * (C / 16) + cb) * HW * 16;
      for (std::int64_t i = 0; i < HW; ++i) {
        for (std::int64_t c = 0; c < 16; ++c) {
          if (src_layout == Layout::kPlain) {
            dst[blocked_base + i * 16 + c] = src[plain_base + c * HW + i];
          } else {
            dst[plain_base + c * HW + i] = src[blocked_base + i * 16 + c];
          }
        }
      }
    }
  }
  (void)dst_layout;
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
  const Layout blocked = src.layout() == Layout::kPlain ? dst.layout() : src.layout();
  if (!layout_supports(blocked, src.shape())) {
    throw ShapeError(fmt::format("layout {} needs a 4-D shape with channels a multiple of 16, got {}",
                                 layout_name(blocked), src.shape()));
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
