// A dense float32 tensor: the unit of data for layers, optimizers, parameter servers and
// checkpoints.
//
// Storage is 64-byte aligned (what oneDNN and AVX-512 want) and owned by the tensor; copies are
// deep, moves are cheap. The device field lets a GPU backend own device memory behind the same
// type; CPU tensors are the only ones whose data() may be dereferenced on the host.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

namespace taas::nn {

enum class Device { kCpu, kGpu };

using Shape = std::vector<std::int64_t>;

// Number of elements of `shape` (1 for a scalar, the empty shape).
std::int64_t NumElements(const Shape& shape);

// "[64, 784]", for messages.
std::string ShapeString(const Shape& shape);

class Tensor {
 public:
  Tensor();  // A scalar 0.
  // Zero-filled tensor of `shape`.
  explicit Tensor(Shape shape, Device device = Device::kCpu);
  // Tensor of `shape` holding `values`; their count must match the shape.
  Tensor(Shape shape, std::span<const float> values);

  Tensor(const Tensor& other);
  Tensor& operator=(const Tensor& other);
  Tensor(Tensor&&) noexcept = default;
  Tensor& operator=(Tensor&&) noexcept = default;
  ~Tensor() = default;

  const Shape& shape() const { return shape_; }
  std::int64_t size() const { return size_; }
  Device device() const { return device_; }

  float* data() { return data_.get(); }
  const float* data() const { return data_.get(); }
  std::span<float> values() { return {data_.get(), static_cast<std::size_t>(size_)}; }
  std::span<const float> values() const { return {data_.get(), static_cast<std::size_t>(size_)}; }

  // Same data viewed with another shape of the same element count.
  void Reshape(Shape shape);

 private:
  struct FreeAligned {
    void operator()(float* p) const;
  };

  Shape shape_;
  std::int64_t size_ = 0;
  Device device_ = Device::kCpu;
  std::unique_ptr<float[], FreeAligned> data_;
};

}  // namespace taas::nn
