// Tensor shapes: a small vector of extents, printed as [2, 3, 4] in error messages.
#pragma once

#include <fmt/format.h>

#include <cstdint>
#include <initializer_list>
#include <string>
#include <vector>

namespace dtrain {

class Shape {
 public:
  Shape() = default;
  Shape(std::initializer_list<std::int64_t> dims) : dims_(dims) {}
  explicit Shape(std::vector<std::int64_t> dims) : dims_(std::move(dims)) {}

  int rank() const { return static_cast<int>(dims_.size()); }
  std::int64_t operator[](int i) const { return dims_.at(static_cast<std::size_t>(i < 0 ? i + rank() : i)); }
  std::int64_t numel() const;
  const std::vector<std::int64_t>& dims() const { return dims_; }
  std::string str() const;
  // The shape of one sample of a batch of this shape: every extent but the first.
  Shape per_sample() const {
    return Shape(std::vector<std::int64_t>(dims_.begin() + (dims_.empty() ? 0 : 1), dims_.end()));
  }

  bool operator==(const Shape& o) const { return dims_ == o.dims_; }
  bool operator!=(const Shape& o) const { return dims_ != o.dims_; }

 private:
  std::vector<std::int64_t> dims_;
};

}  // namespace dtrain

template <>
struct fmt::formatter<dtrain::Shape> : fmt::formatter<std::string> {
  auto format(const dtrain::Shape& s, format_context& ctx) const {
    return fmt::formatter<std::string>::format(s.str(), ctx);
  }
};
