// A dense tensor: shared storage, a logical shape, an element type, a device and a memory layout.
// Tensors are contiguous; reshape of a plain tensor shares storage, everything else copies.
// Copies of a Tensor object share the same storage (like a shared_ptr).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/error.h"
#include "tensor/device.h"
#include "tensor/dtype.h"
#include "tensor/shape.h"

namespace dtrain {

class Storage {
 public:
  Storage(std::size_t bytes, Device device);
  // CPU memory owned elsewhere (shared memory of a communicator), which must outlive this storage;
  // never freed here.
  Storage(void* external, std::size_t bytes);
  ~Storage();
  Storage(const Storage&) = delete;
  Storage& operator=(const Storage&) = delete;

  void* data() const { return data_; }
  std::size_t bytes() const { return bytes_; }
  Device device() const { return device_; }

 private:
  void* data_ = nullptr;
  std::size_t bytes_ = 0;
  Device device_;
  bool owned_ = true;
};

template <typename T>
constexpr DType dtype_of();
template <>
constexpr DType dtype_of<float>() { return DType::kF32; }
template <>
constexpr DType dtype_of<double>() { return DType::kF64; }
template <>
constexpr DType dtype_of<std::int32_t>() { return DType::kI32; }

class Tensor {
 public:
  Tensor() = default;

  // Uninitialised memory of the given shape (from the caching allocator).
  static Tensor empty(const Shape& shape, DType dtype = DType::kF32, Device device = Device::cpu(),
                      Layout layout = Layout::kPlain);
  static Tensor zeros(const Shape& shape, DType dtype = DType::kF32, Device device = Device::cpu(),
                      Layout layout = Layout::kPlain);
  static Tensor full(const Shape& shape, double value, DType dtype = DType::kF32);
  // A plain CPU tensor over `data` (aligned for dtype), memory owned elsewhere that must outlive
  // the tensor and all its views.
  static Tensor over_external(void* data, const Shape& shape, DType dtype = DType::kF32);
  // Plain CPU tensor holding `values` (converted to `dtype`); values.size() must equal numel.
  static Tensor from_vector(const std::vector<float>& values, const Shape& shape, DType dtype = DType::kF32);
  static Tensor from_vector(const std::vector<double>& values, const Shape& shape, DType dtype = DType::kF64);
  static Tensor from_labels(const std::vector<std::int32_t>& labels);
  // An empty tensor with the same shape, dtype, device and layout.
  static Tensor empty_like(const Tensor& t);
  static Tensor zeros_like(const Tensor& t);

  bool defined() const { return storage_ != nullptr; }
  const Shape& shape() const { return shape_; }
  int dim() const { return shape_.rank(); }
  std::int64_t size(int d) const { return shape_[d]; }
  std::int64_t numel() const { return numel_; }
  DType dtype() const { return dtype_; }
  Device device() const { return storage_ ? storage_->device() : Device::cpu(); }
  Layout layout() const { return layout_; }
  // Bytes the elements occupy (numel * element size; layouts used here add no padding).
  std::size_t nbytes() const { return static_cast<std::size_t>(numel_) * dtype_size(dtype_); }

  void* raw_data() const { return static_cast<char*>(storage_->data()) + offset_; }
  template <typename T>
  T* data() const {
    check_dtype(dtype_of<T>());
    return static_cast<T*>(raw_data());
  }

  // Same storage, new shape with the same number of elements (plain layout only).
  Tensor reshape(const Shape& shape) const;
  // Rows [begin, end) of the first dimension, sharing storage (plain layout only).
  Tensor slice_rows(std::int64_t begin, std::int64_t end) const;
  Tensor clone() const;
  Tensor to(DType dtype) const;       // converted copy (or *this when already that dtype)
  Tensor to_layout(Layout layout) const;  // reordered copy (or *this when already that layout)
  Tensor to_plain() const { return to_layout(Layout::kPlain); }
  // Copies src's values into this tensor (same shape; converts dtype and layout).
  void copy_from(const Tensor& src);
  void fill(double value);

  // Host copies in logical (plain) order, for tests, metrics and checkpoints.
  std::vector<float> to_vector() const;
  std::vector<double> to_vector_f64() const;
  double item() const;  // the single element of a one-element tensor

  bool shares_storage_with(const Tensor& o) const { return storage_ == o.storage_; }
  // Whether this handle is the only one holding its storage (no other tensor, view or copy), so
  // writing into it in place is invisible to everything else.
  bool storage_unshared() const { return storage_ != nullptr && storage_.use_count() == 1; }
  std::string describe() const;  // "f32[64, 10] cpu plain"

 private:
  void check_dtype(DType expected) const;

  std::shared_ptr<Storage> storage_;
  std::size_t offset_ = 0;
  Shape shape_;
  std::int64_t numel_ = 0;
  DType dtype_ = DType::kF32;
  Layout layout_ = Layout::kPlain;
};

// Throws ShapeError naming both shapes unless a and b have equal shapes.
void check_same_shape(const Tensor& a, const Tensor& b, const char* what);

}  // namespace dtrain
