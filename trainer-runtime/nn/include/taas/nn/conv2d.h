// 2-D convolution, input [N, H, W, C] (NHWC): on oneDNN on the host (primitives kept per input
// shape, bound to the variables' memory at every call, so the runtime may make them views of its
// buffers), on the registered device kernels (device_kernels.h) for an input on another device.
#pragma once

#include <cstdint>
#include <list>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "taas/nn/compute.h"
#include "taas/nn/device_kernels.h"
#include "taas/nn/layer.h"
#include "taas/tensor/initializers.h"

namespace taas::nn {

// Keras's `padding`: kValid uses no padding, kSame pads so the output is ceil(input / strides)
// (TensorFlow's split: the extra row or column goes at the bottom or right).
enum class Padding { kValid, kSame };

// Keras's Conv2D arguments (square kernels and strides), plus the input channels Keras would
// infer. Defaults are Keras's.
struct Conv2DOptions {
  std::string name;  // the layer's, in errors; its variables' unless named below
  // The variables' names, "<name>/kernel" and "<name>/bias" when empty (DenseOptions').
  std::string kernel_name = {};
  std::string bias_name = {};
  std::int64_t in_channels = 0;  // required: C of the input [N, H, W, C]
  std::int64_t filters = 0;      // required: output channels
  std::int64_t kernel_size = 0;  // required: the kernel is kernel_size x kernel_size
  std::int64_t strides = 1;
  Padding padding = Padding::kValid;
  Activation activation = Activation::kNone;  // kRelu runs as a oneDNN post-op
  // Keras's "glorot_uniform": uniform in +-sqrt(6 / (fan_in + fan_out)), fans below.
  Initializer kernel_initializer = initializers::GlorotUniform();
  Initializer bias_initializer = initializers::Zeros();  // Keras's "zeros"
  Regularizer kernel_regularizer = {};                   // Keras's None
};

// Kernel [kernel_size, kernel_size, in_channels, filters] ("<name>/kernel", TF's HWIO), bias
// [filters] ("<name>/bias"), unless the options name them. The initialisers fill the variables at
// construction (the kernel's fans: kernel_size^2 * in_channels in, kernel_size^2 * filters out,
// as Keras's); a random one without a seed of its own is seeded with the hash of the variable's
// name, so every replica builds the same values (initializers.h). Invalid initialiser parameters
// or one name for both variables are a programming error (layer.h): the constructor throws
// std::invalid_argument "<name>: kernel_initializer: <why>";
// check options read from input first with Initializer::Validate().
class Conv2D final : public Layer {
 public:
  Conv2D(ComputeContext& context, Conv2DOptions options);
  ~Conv2D() override;
  absl::StatusOr<const Tensor*> Forward(const Tensor& input, bool training) override;
  absl::StatusOr<const Tensor*> Backward(const Tensor& grad_output) override;
  std::vector<Variable*> variables() override { return {&kernel_, &bias_}; }
  bool SkipReluMask() override;
  absl::Status AddRegularizationLoss(Tensor& total) override;
  const Regularizer& regularizer() const { return regularizer_; }
  Variable& kernel() { return kernel_; }
  Variable& bias() { return bias_; }
  // Prepares Backward for `input` (on the host) as if Forward(input) had run, without computing:
  // the returned output has the right shape but stale contents. For callers that restore state
  // (ChunkedConvPool).
  absl::StatusOr<const Tensor*> Rebind(const Tensor& input);
  // The oneDNN implementations chosen for the last input shape ("fwd: ..., bwd_d: ...").
  std::string ImplementationInfo() const;
  // Input shapes the layer holds primitives for on the host: at most kMaxShapePlans.
  std::size_t planned_shapes() const { return plans_.size(); }

 private:
  struct Plan;
  // The primitives for `input_shape`, created on first use; InvalidArgument for an input the
  // kernel does not fit in.
  absl::StatusOr<Plan*> PlanFor(const Shape& input_shape);
  // Forward's shape check.
  absl::Status CheckInput(const Tensor& input) const;
  // The output size and padding for `input_shape` (checked by CheckInput); InvalidArgument for an
  // input the kernel does not fit in.
  absl::StatusOr<ConvGeometry> GeometryFor(const Shape& input_shape) const;
  absl::StatusOr<const Tensor*> ForwardOnDevice(const Tensor& input);
  absl::StatusOr<const Tensor*> BackwardOnDevice(const Tensor& grad_output);

  ComputeContext& context_;
  std::int64_t in_channels_, filters_, kernel_size_, strides_;
  Padding padding_;
  Activation activation_;
  Regularizer regularizer_;
  bool skip_relu_mask_ = false;
  Variable kernel_, bias_;
  // Most recently used first, at most kMaxShapePlans (layer.h; internal::ShapePlans).
  std::list<std::pair<Shape, std::unique_ptr<Plan>>> plans_;
  Plan* plan_ = nullptr;
  ConvGeometry geometry_;                      // of the last Forward on a device
  std::unique_ptr<DeviceState> device_state_;  // the device kernels' own
  const Tensor* input_ = nullptr;
  Tensor output_, masked_grad_, input_grad_;
};

}  // namespace taas::nn
