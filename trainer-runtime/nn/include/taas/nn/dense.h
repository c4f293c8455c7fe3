// A fully connected layer: y = activation(x W + b). Matrix products run on oneDNN's sgemm.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "taas/nn/layer.h"

namespace taas::nn {

// Keras's Dense arguments, plus the input width Keras would infer.
struct DenseOptions {
  std::string name;         // variables "<name>/kernel" and "<name>/bias"
  std::int64_t inputs = 0;  // required: features per example, x is [N, inputs]
  std::int64_t units = 0;   // required: outputs per example, y is [N, units]
  Activation activation = Activation::kNone;
};

// x [N, inputs], kernel W [inputs, units] ("<name>/kernel"), bias b [units] ("<name>/bias").
// Initialisers: the kernel is Glorot-uniform (fan in `inputs`, fan out `units`) seeded with the
// hash of its variable name, the bias zeros; a model that wants others overwrites kernel().value
// and bias().value after construction (the Fashion-MNIST models do).
class Dense final : public Layer {
 public:
  explicit Dense(DenseOptions options);
  absl::StatusOr<const Tensor*> Forward(const Tensor& input, bool training) override;
  absl::StatusOr<const Tensor*> Backward(const Tensor& grad_output) override;
  std::vector<Variable*> variables() override { return {&kernel_, &bias_}; }
  bool SkipReluMask() override;
  Variable& kernel() { return kernel_; }
  Variable& bias() { return bias_; }

 private:
  std::int64_t in_, out_;
  Activation activation_;
  bool skip_relu_mask_ = false;
  Variable kernel_, bias_;
  const Tensor* input_ = nullptr;
  Tensor output_, masked_grad_, input_grad_;
};

}  // namespace taas::nn
