#include <array>

#include "core/error.h"
#include "tensor/backend.h"
#include "tensor/kernels/cpu/cpu_backend.h"

namespace dtrain {
namespace {

thread_local bool force_reference = false;

std::array<Backend*, 2>& registry() {
  static std::array<Backend*, 2> backends{};
  return backends;
}

}  // namespace

bool plain_f32_cpu_of_shape(const Tensor& t, const Shape& shape) {
  return t.defined() && t.dtype() == DType::kF32 && t.layout() == Layout::kPlain && t.device() == Device::cpu() &&
         t.shape() == shape;
}

void check_weight_destination(const Tensor& into, const Shape& shape) {
  DT_CHECK(plain_f32_cpu_of_shape(into, shape),
           "a weight gradient of shape {} cannot be written into a tensor of shape {}", shape, into.shape());
}

void check_scaled_weight_destination(const Tensor& into, const Shape& shape) {
  DT_CHECK(into.defined() && (into.dtype() == DType::kBF16 || into.dtype() == DType::kF16) &&
               into.layout() == Layout::kPlain && into.device() == Device::cpu() && into.shape() == shape,
           "a weight gradient of shape {} cannot be written scaled into {}", shape,
           into.defined() ? into.describe() : std::string("an undefined tensor"));
}

Tensor f32_operand(const Tensor& t) { return t.defined() && t.dtype() == DType::kBF16 ? t.to(DType::kF32) : t; }

void register_backend(DeviceType type, Backend* backend) { registry()[static_cast<std::size_t>(type)] = backend; }

Backend& dispatch(Device device, DType dtype) {
  if (device.type == DeviceType::kCPU && (force_reference || dtype == DType::kF64)) return reference_backend();
  Backend* b = registry()[static_cast<std::size_t>(device.type)];
  if (b == nullptr) {
    if (device.type == DeviceType::kCPU) return cpu_backend();
    throw InputError(fmt::format("no kernels for device {} in this build", device.str()));
  }
  return *b;
}

Backend& dispatch(const Tensor& t) { return dispatch(t.device(), t.dtype()); }

ReferenceKernelsScope::ReferenceKernelsScope() : previous_(force_reference) { force_reference = true; }
ReferenceKernelsScope::~ReferenceKernelsScope() { force_reference = previous_; }

}  // namespace dtrain
