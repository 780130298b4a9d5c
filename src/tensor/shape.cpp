#include "tensor/shape.h"

#include "core/error.h"

namespace dtrain {

std::int64_t Shape::numel() const {
  std::int64_t n = 1;
  for (std::int64_t d : dims_) {
    if (d < 0) throw ShapeError(fmt::format("negative extent in shape {}", str()));
    n *= d;
  }
  return n;
}

std::string Shape::str() const { return fmt::format("[{}]", fmt::join(dims_, ", ")); }

}  // namespace dtrain
