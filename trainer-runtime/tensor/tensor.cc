#include "taas/tensor/tensor.h"

#include <algorithm>
#include <new>
#include <stdexcept>

namespace taas {
namespace {

DeviceMemory& MemoryOrThrow(Device device) {
  DeviceMemory* memory = MemoryFor(device.type);
  if (memory == nullptr) {
    throw std::invalid_argument("no engine for device " + DeviceName(device) +
                                " is part of this program");
  }
  return *memory;
}

// Bytes of `count` floats; at least one float, so every tensor owns memory.
std::size_t BytesOf(std::int64_t count) {
  return static_cast<std::size_t>(std::max<std::int64_t>(count, 1)) * sizeof(float);
}

}  // namespace

std::int64_t NumElements(const Shape& shape) {
  std::int64_t count = 1;
  for (auto dim : shape) count *= dim;
  return count;
}

std::string ShapeString(const Shape& shape) {
  std::string text = "[";
  for (std::size_t i = 0; i < shape.size(); ++i) {
    if (i > 0) text += ", ";
    text += std::to_string(shape[i]);
  }
  return text + "]";
}

void Tensor::Free::operator()(float* p) const {
  if (owned) MemoryFor(device.type)->Free(device, p);
}

Tensor::Tensor() : Tensor(Shape{}) {}

Tensor::Tensor(Shape shape, Device device)
    : shape_(std::move(shape)),
      size_(NumElements(shape_)),
      device_(device),
      data_(nullptr, {device}) {
  for (auto dim : shape_) {
    if (dim < 0)
      throw std::invalid_argument("tensor shape " + ShapeString(shape_) + " is negative");
  }
  void* memory = MemoryOrThrow(device_).Allocate(device_, BytesOf(size_));
  if (memory == nullptr) throw std::bad_alloc();
  data_.reset(static_cast<float*>(memory));
}

Tensor::Tensor(Shape shape, std::span<const float> values) : Tensor(std::move(shape)) {
  if (static_cast<std::int64_t>(values.size()) != size_) {
    throw std::invalid_argument("tensor of shape " + ShapeString(shape_) + " needs " +
                                std::to_string(size_) + " values, got " +
                                std::to_string(values.size()));
  }
  std::copy(values.begin(), values.end(), data_.get());
}

Tensor::Tensor(const Tensor& other) : Tensor(other.To(other.device_)) {}

Tensor& Tensor::operator=(const Tensor& other) {
  if (this != &other) *this = Tensor(other);
  return *this;
}

Tensor::Tensor(ViewTag, float* data, Shape shape, Device device)
    : shape_(std::move(shape)),
      size_(NumElements(shape_)),
      device_(device),
      data_(data, {device, /*owned=*/false}) {
  for (auto dim : shape_) {
    if (dim < 0)
      throw std::invalid_argument("tensor shape " + ShapeString(shape_) + " is negative");
  }
}

std::span<float> Tensor::values() {
  if (!device_.is_cpu()) {
    throw std::logic_error("values() of a tensor on " + DeviceName(device_) +
                           ": the host may not read a device's memory; copy it with To() or "
                           "CopyInto()");
  }
  return {data_.get(), static_cast<std::size_t>(size_)};
}

std::span<const float> Tensor::values() const { return const_cast<Tensor*>(this)->values(); }

Tensor Tensor::Slice(std::int64_t offset, Shape shape) {
  const std::int64_t count = NumElements(shape);
  if (offset < 0 || count < 0 || offset > size_ || count > size_ - offset) {
    throw std::invalid_argument("slice of " + ShapeString(shape) + " at " + std::to_string(offset) +
                                " does not fit in a tensor of " + ShapeString(shape_));
  }
  return Tensor(ViewTag{}, data_.get() + offset, std::move(shape), device_);
}

Tensor Tensor::View(float* data, Shape shape, Device device) {
  return Tensor(ViewTag{}, data, std::move(shape), device);
}

absl::Status CopyInto(const Tensor& from, Tensor& to) {
  if (from.size() != to.size()) {
    return absl::InvalidArgumentError("cannot copy a tensor of " + ShapeString(from.shape()) +
                                      " into one of " + ShapeString(to.shape()));
  }
  // The memory that knows both ends: the non-host one's (the host's when both are the host).
  const Device engine = to.device().is_cpu() ? from.device() : to.device();
  try {
    MemoryOrThrow(engine).Copy(to.data(), to.device(), from.data(), from.device(),
                               static_cast<std::size_t>(from.size()) * sizeof(float));
  } catch (const std::exception& e) {
    return absl::InternalError("copying " + ShapeString(from.shape()) + " from " +
                               DeviceName(from.device()) + " to " + DeviceName(to.device()) + ": " +
                               e.what());
  }
  return absl::OkStatus();
}

Tensor Tensor::To(Device device) const {
  Tensor copy(shape_, device);
  // The memory that knows both ends: the non-host one's (the host's when both are the host).
  const Device engine = device.is_cpu() ? device_ : device;
  MemoryOrThrow(engine).Copy(copy.data_.get(), device, data_.get(), device_,
                             static_cast<std::size_t>(size_) * sizeof(float));
  return copy;
}

void Tensor::Reshape(Shape shape) {
  if (NumElements(shape) != size_) {
    throw std::invalid_argument("cannot reshape " + ShapeString(shape_) + " to " +
                                ShapeString(shape));
  }
  shape_ = std::move(shape);
}

}  // namespace taas
