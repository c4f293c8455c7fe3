// A dense float32 tensor: the unit of data for layers, optimizers, parameter servers and
// checkpoints.
//
// Storage lives on the tensor's device (device.h): host tensors are 64-byte aligned (what oneDNN
// and AVX-512 want), another device's come from the memory its engine registered. A tensor owns
// its storage, or is a view of another tensor's (Slice: the runtime's fused buffers, whose parts
// are a model's gradients). Copies are deep and stay on the device (a copy of a view owns its
// elements), moves are cheap, To() and CopyInto() copy across devices. Only host tensors' data()
// may be dereferenced here, and values() refuses any other: the host sees a device's memory only
// through an explicit copy.
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

  // The elements, in row-major order (on the tensor's device: an address of the device's memory,
  // which only the device's engine may dereference).
  float* data() { return data_.get(); }
  const float* data() const { return data_.get(); }
  // The elements as host spans. Throws std::logic_error naming the device for a tensor that is not
  // on the host: reading a device's memory from the host is a bug, not a slow path.
  std::span<float> values();
  std::span<const float> values() const;

  // A copy of this tensor on `device` (a plain copy when it is already there).
  Tensor To(Device device) const;

  // A view of elements [offset, offset + NumElements(shape)) of this tensor, on its device, that
  // owns nothing: it must not outlive this tensor's storage, and a write through either shows in
  // both. Throws std::invalid_argument when the range is not inside this tensor.
  Tensor Slice(std::int64_t offset, Shape shape);
  // A view of memory an engine manages: NumElements(shape) floats at `data` on `device`, owned
  // elsewhere (an engine giving its host code a view of its own memory). The caller vouches for
  // the address.
  static Tensor View(float* data, Shape shape, Device device);
  bool is_view() const { return !data_.get_deleter().owned; }

  // Same data viewed with another shape of the same element count.
  void Reshape(Shape shape);

 private:
  struct Free {
    Device device;
    bool owned = true;  // false for a view
    void operator()(float* p) const;
  };
  struct ViewTag {};
  Tensor(ViewTag, float* data, Shape shape, Device device);

  Shape shape_;
  std::int64_t size_ = 0;
  Device device_;
  std::unique_ptr<float[], Free> data_;
};

// Copies `from` into `to`, which hold the same number of elements, on any devices (through the
// memory of the device that is not the host). InvalidArgument naming both shapes for counts that
// differ; Internal with the device's message when the copy fails.
absl::Status CopyInto(const Tensor& from, Tensor& to);

}  // namespace taas
