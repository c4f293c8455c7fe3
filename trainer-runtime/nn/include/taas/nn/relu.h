// A standalone ReLU, y = max(x, 0), for inputs of any shape; Dense and Conv2D fuse theirs
// (Activation::kRelu).
#pragma once

#include <string>
#include <utility>

#include "taas/nn/layer.h"

namespace taas::nn {

class ReLU final : public Layer {
 public:
  explicit ReLU(std::string name) : Layer(std::move(name)) {}
  absl::StatusOr<const Tensor*> Forward(const Tensor& input, bool training) override;
  absl::StatusOr<const Tensor*> Backward(const Tensor& grad_output) override;

 private:
  bool forward_ran_ = false;
  Tensor output_, input_grad_;
};

}  // namespace taas::nn
