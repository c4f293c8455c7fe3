// A fully connected layer: y = activation(x W + b), on the kernels of its input's device
// (device_kernels.h: oneDNN's sgemm on the host).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "taas/nn/layer.h"
#include "taas/tensor/initializers.h"

namespace taas::nn {

// Keras's Dense arguments, plus the input width Keras would infer. Defaults are Keras's.
struct DenseOptions {
  std::string name;  // the layer's, in errors; its variables' unless named below
  // The variables' names, "<name>/kernel" and "<name>/bias" when empty: a port keeps its
  // checkpoints' names ("layer1/weights"). They key checkpoints, the parameter servers and the
  // initialisers' seeds, so they must be unique in the model.
  std::string kernel_name = {};
  std::string bias_name = {};
  std::int64_t inputs = 0;  // required: features per example, x is [N, inputs]
  std::int64_t units = 0;   // required: outputs per example, y is [N, units]
  Activation activation = Activation::kNone;
  // Keras's "glorot_uniform": uniform in +-sqrt(6 / (inputs + units)).
  Initializer kernel_initializer = initializers::GlorotUniform();
  Initializer bias_initializer = initializers::Zeros();  // Keras's "zeros"
  Regularizer kernel_regularizer = {};                   // Keras's None
};

// x [N, inputs], kernel W [inputs, units] ("<name>/kernel"), bias b [units] ("<name>/bias"),
// unless the options name them. The initialisers fill the variables at construction (fans:
// `inputs` in, `units` out; the bias's both `units`); a random one without a seed of its own is
// seeded with the hash of the variable's name ("<name>/kernel"), so every replica builds the same
// values (initializers.h). Invalid initialiser parameters (a stddev <= 0, a NaN), a negative
// penalty or one name for both variables are a programming error (layer.h): the constructor
// throws std::invalid_argument "<name>: kernel_initializer: <why>"; check options read from input
// first with Initializer::Validate().
class Dense final : public Layer {
 public:
  explicit Dense(DenseOptions options);
  absl::StatusOr<const Tensor*> Forward(const Tensor& input, bool training) override;
  absl::StatusOr<const Tensor*> Backward(const Tensor& grad_output) override;
  std::vector<Variable*> variables() override { return {&kernel_, &bias_}; }
  bool SkipReluMask() override;
  absl::Status AddRegularizationLoss(Tensor& total) override;
  Variable& kernel() { return kernel_; }
  Variable& bias() { return bias_; }

 private:
  std::int64_t in_, out_;
  Activation activation_;
  Regularizer regularizer_;
  bool skip_relu_mask_ = false;
  Variable kernel_, bias_;
  const Tensor* input_ = nullptr;
  Tensor output_, masked_grad_, input_grad_;
};

}  // namespace taas::nn
