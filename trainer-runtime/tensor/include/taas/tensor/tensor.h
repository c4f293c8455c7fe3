// A dense float32 tensor: the unit of data for layers, optimizers, parameter servers and
// checkpoints.
//
// Storage is owned by the tensor and lives on its device (device.h): host tensors are 64-byte
// aligned (what oneDNN and AVX-512 want), another device's come from the memory its engine
// registered. Copies are deep and stay on the device, moves are cheap, To() copies across
// devices. Only host tensors' data() may be dereferenced here; the parameter servers, checkpoints
// and summaries see host tensors only.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "taas/tensor/device.h"

namespace taas {

using Shape = std::vector<std::int64_t>;

// Number of elements of `shape` (1 for a scalar, the empty shape).
std::int64_t NumElements(const Shape& shape);

// "[64, 784]", for messages.
std::string ShapeString(const Shape& shape);

class Tensor {
 public:
  Tensor();  // A scalar 0 on the host.
  // Zero-filled tensor of `shape` on `device`. Throws std::invalid_argument for a negative
  // dimension or a device no engine registered, std::bad_alloc when the device is full.
  explicit Tensor(Shape shape, Device device = Device::Cpu());
  // Host tensor of `shape` holding `values`; their count must match the shape.
  Tensor(Shape shape, std::span<const float> values);

  Tensor(const Tensor& other);
  Tensor& operator=(const Tensor& other);
  Tensor(Tensor&&) noexcept = default;
  Tensor& operator=(Tensor&&) noexcept = default;
  ~Tensor() = default;

  const Shape& shape() const { return shape_; }
  std::int64_t size() const { return size_; }
  Device device() const { return device_; }

  // The elements, in row-major order (on the tensor's device).
  float* data() { return data_.get(); }
  const float* data() const { return data_.get(); }
  // The elements as host spans: for host tensors only.
  std::span<float> values() { return {data_.get(), static_cast<std::size_t>(size_)}; }
  std::span<const float> values() const { return {data_.get(), static_cast<std::size_t>(size_)}; }

  // A copy of this tensor on `device` (a plain copy when it is already there).
  Tensor To(Device device) const;

  // Same data viewed with another shape of the same element count.
  void Reshape(Shape shape);

 private:
  struct Free {
    Device device;
    void operator()(float* p) const;
  };

  Shape shape_;
  std::int64_t size_ = 0;
  Device device_;
  std::unique_ptr<float[], Free> data_;
};

}  // namespace taas
