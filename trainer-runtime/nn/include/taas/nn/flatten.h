// [N, d1, d2, ...] -> [N, d1 * d2 * ...] (row-major, so NHWC flattens like Keras).
#pragma once

#include <string>
#include <utility>

#include "taas/nn/layer.h"

namespace taas::nn {

class Flatten final : public Layer {
 public:
  explicit Flatten(std::string name) : Layer(std::move(name)) {}
  absl::StatusOr<const Tensor*> Forward(const Tensor& input, bool training) override;
  absl::StatusOr<const Tensor*> Backward(const Tensor& grad_output) override;

 private:
  bool forward_ran_ = false;
  Shape input_shape_;
  Tensor output_, input_grad_;
};

}  // namespace taas::nn
