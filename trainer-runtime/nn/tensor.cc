#include "taas/nn/tensor.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <stdexcept>

namespace taas::nn {
namespace {

constexpr std::size_t kAlignment = 64;

float* AllocateZeroed(std::int64_t count) {
  const std::size_t bytes = std::max<std::size_t>(
      kAlignment,
      (static_cast<std::size_t>(count) * sizeof(float) + kAlignment - 1) / kAlignment * kAlignment);
  void* memory = std::aligned_alloc(kAlignment, bytes);
  if (memory == nullptr) throw std::bad_alloc();
  std::memset(memory, 0, bytes);
  return static_cast<float*>(memory);
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

void Tensor::FreeAligned::operator()(float* p) const { std::free(p); }

Tensor::Tensor() : Tensor(Shape{}) {}

Tensor::Tensor(Shape shape, Device device)
    : shape_(std::move(shape)), size_(NumElements(shape_)), device_(device) {
  for (auto dim : shape_) {
    if (dim < 0)
      throw std::invalid_argument("tensor shape " + ShapeString(shape_) + " is negative");
  }
  data_.reset(AllocateZeroed(size_));
}

Tensor::Tensor(Shape shape, std::span<const float> values) : Tensor(std::move(shape)) {
  if (static_cast<std::int64_t>(values.size()) != size_) {
    throw std::invalid_argument("tensor of shape " + ShapeString(shape_) + " needs " +
                                std::to_string(size_) + " values, got " +
                                std::to_string(values.size()));
  }
  std::copy(values.begin(), values.end(), data_.get());
}

Tensor::Tensor(const Tensor& other) : Tensor(other.shape_, other.device_) {
  std::copy_n(other.data_.get(), size_, data_.get());
}

Tensor& Tensor::operator=(const Tensor& other) {
  if (this != &other) *this = Tensor(other);
  return *this;
}

void Tensor::Reshape(Shape shape) {
  if (NumElements(shape) != size_) {
    throw std::invalid_argument("cannot reshape " + ShapeString(shape_) + " to " +
                                ShapeString(shape));
  }
  shape_ = std::move(shape);
}

}  // namespace taas::nn
