#include "tensor/tensor.h"

#include "tensor/allocator.h"
#include "tensor/backend.h"
#include "tensor/layout.h"

namespace dtrain {

Storage::Storage(std::size_t bytes, Device device) : bytes_(bytes), device_(device) {
  if (device.type != DeviceType::kCPU) {
    throw InputError(fmt::format("device {} is not available in this build", device.str()));
  }
  data_ = cpu_allocator().allocate(bytes);
}

Storage::Storage(void* external, std::size_t bytes)
    : data_(external), bytes_(bytes), device_(Device::cpu()), owned_(false) {}

Storage::~Storage() {
  if (owned_) cpu_allocator().deallocate(data_, bytes_);
}

Tensor Tensor::over_external(void* data, const Shape& shape, DType dtype) {
  Tensor t;
  t.shape_ = shape;
  t.numel_ = shape.numel();
  t.dtype_ = dtype;
  t.storage_ = std::make_shared<Storage>(data, t.nbytes());
  return t;
}

Tensor Tensor::empty(const Shape& shape, DType dtype, Device device, Layout layout) {
  check_layout_supports(layout, shape);
  Tensor t;
  t.shape_ = shape;
  t.numel_ = shape.numel();
  t.dtype_ = dtype;
  t.layout_ = layout;
  t.storage_ = std::make_shared<Storage>(t.nbytes(), device);
  return t;
}

Tensor Tensor::zeros(const Shape& shape, DType dtype, Device device, Layout layout) {
  Tensor t = empty(shape, dtype, device, layout);
  t.fill(0.0);
  return t;
}

Tensor Tensor::full(const Shape& shape, double value, DType dtype) {
  Tensor t = empty(shape, dtype);
  t.fill(value);
  return t;
}

Tensor Tensor::from_vector(const std::vector<float>& values, const Shape& shape, DType dtype) {
  if (static_cast<std::int64_t>(values.size()) != shape.numel()) {
    throw ShapeError(fmt::format("{} values do not fill shape {}", values.size(), shape));
  }
  Tensor src = empty(shape, DType::kF32);
  std::copy(values.begin(), values.end(), src.data<float>());
  return src.to(dtype);
}

Tensor Tensor::from_vector(const std::vector<double>& values, const Shape& shape, DType dtype) {
  if (static_cast<std::int64_t>(values.size()) != shape.numel()) {
    throw ShapeError(fmt::format("{} values do not fill shape {}", values.size(), shape));
  }
  Tensor src = empty(shape, DType::kF64);
  std::copy(values.begin(), values.end(), src.data<double>());
  return src.to(dtype);
}

Tensor Tensor::from_labels(const std::vector<std::int32_t>& labels) {
  Tensor t = empty(Shape{static_cast<std::int64_t>(labels.size())}, DType::kI32);
  std::copy(labels.begin(), labels.end(), t.data<std::int32_t>());
  return t;
}

Tensor Tensor::empty_like(const Tensor& t) { return empty(t.shape(), t.dtype(), t.device(), t.layout()); }

Tensor Tensor::zeros_like(const Tensor& t) { return zeros(t.shape(), t.dtype(), t.device(), t.layout()); }

Tensor Tensor::reshape(const Shape& shape) const {
  if (shape.numel() != numel_) {
    throw ShapeError(
        fmt::format("cannot reshape {} ({} elements) to {} ({} elements)", shape_, numel_, shape, shape.numel()));
  }
  DT_CHECK(layout_ == Layout::kPlain, "reshape needs a plain tensor, got {}", layout_name(layout_));
  Tensor t = *this;
  t.shape_ = shape;
  return t;
}

Tensor Tensor::slice_rows(std::int64_t begin, std::int64_t end) const {
  // The blocked layouts keep the batch outermost (device.h), so a run of rows is one run of memory.
  DT_CHECK(layout_ == Layout::kPlain || dim() == 4, "slice_rows needs a plain or 4-d blocked tensor, got {}",
           layout_name(layout_));
  DT_CHECK(dim() >= 1 && begin >= 0 && begin <= end && end <= size(0), "rows [{}, {}) of {}", begin, end, shape_);
  std::vector<std::int64_t> dims = shape_.dims();
  const std::int64_t row = dims[0] == 0 ? 0 : numel_ / dims[0];
  dims[0] = end - begin;
  Tensor t = *this;
  t.shape_ = Shape(dims);
  t.numel_ = t.shape_.numel();
  t.offset_ = offset_ + static_cast<std::size_t>(begin * row) * dtype_size(dtype_);
  return t;
}

Tensor Tensor::clone() const {
  Tensor t = empty_like(*this);
  dispatch(*this).copy(*this, t);
  return t;
}

Tensor Tensor::to(DType dtype) const {
  if (dtype == dtype_) return *this;
  Tensor t = empty(shape_, dtype, device(), layout_);
  dispatch(*this).copy(*this, t);
  return t;
}

Tensor Tensor::to_layout(Layout layout) const {
  if (layout == layout_) return *this;
  Tensor t = empty(shape_, dtype_, device(), layout);
  dispatch(*this).copy(*this, t);
  return t;
}

void Tensor::copy_from(const Tensor& src) {
  check_same_shape(src, *this, "copy");
  dispatch(*this).copy(src, *this);
}

void Tensor::fill(double value) { dispatch(*this).fill(*this, value); }

std::vector<float> Tensor::to_vector() const {
  const Tensor t = to_plain().to(DType::kF32);
  const float* p = t.data<float>();
  return {p, p + t.numel()};
}

std::vector<double> Tensor::to_vector_f64() const {
  const Tensor t = to_plain().to(DType::kF64);
  const double* p = t.data<double>();
  return {p, p + t.numel()};
}

double Tensor::item() const {
  if (numel_ != 1) throw ShapeError(fmt::format("item() needs one element, tensor has shape {}", shape_));
  return to_vector_f64()[0];
}

std::string Tensor::describe() const {
  return fmt::format("{}{} {} {}", dtype_name(dtype_), shape_, device().str(), layout_name(layout_));
}

void Tensor::check_dtype(DType expected) const {
  if (dtype_ != expected) {
    throw InternalError(fmt::format("tensor {} accessed as {}", describe(), dtype_name(expected)));
  }
}

void check_same_shape(const Tensor& a, const Tensor& b, const char* what) {
  if (a.shape() != b.shape()) {
    throw ShapeError(fmt::format("{}: shapes differ: {} vs {}", what, a.shape(), b.shape()));
  }
}

}  // namespace dtrain
