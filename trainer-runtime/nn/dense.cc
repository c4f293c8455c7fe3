#include "taas/nn/dense.h"

#include <tuple>

#include "layer_internal.h"

namespace taas::nn {

using internal::Ensure;

Dense::Dense(DenseOptions options)
    : Layer(std::move(options.name)),
      in_(options.inputs),
      out_(options.units),
      activation_(options.activation),
      regularizer_(options.kernel_regularizer),
      kernel_{"", Tensor({in_, out_}), Tensor({in_, out_})},
      bias_{"", Tensor({out_}), Tensor({out_})} {
  // Named before the initialisers run: a random one is seeded with its variable's name.
  std::tie(kernel_.name, bias_.name) =
      internal::KernelAndBiasNames(this->name(), options.kernel_name, options.bias_name);
  internal::InitializeVariable(this->name(), "kernel_initializer", options.kernel_initializer,
                               kernel_);
  internal::InitializeVariable(this->name(), "bias_initializer", options.bias_initializer, bias_);
  internal::CheckRegularizer(this->name(), regularizer_);
}

absl::StatusOr<const Tensor*> Dense::Forward(const Tensor& input, bool) {
  input_ = nullptr;
  if (input.shape().size() != 2 || input.shape()[1] != in_) {
    return internal::InputShapeError(name(), "[N, " + std::to_string(in_) + "]", input.shape());
  }
  const std::int64_t n = input.shape()[0];
  const Device device = input.device();
  TAAS_RETURN_IF_ERROR(internal::CheckVariablesOn(name(), device, {&kernel_, &bias_}));
  TAAS_RETURN_IF_ERROR(internal::OnDevice(name(), device, [&](DeviceKernels& kernels) {
    Ensure(output_, {n, out_}, device);
    return kernels.DenseForward(input, kernel_.value, bias_.value, activation_ == Activation::kRelu,
                                output_);
  }));
  input_ = &input;
  return &output_;
}

bool Dense::SkipReluMask() {
  if (activation_ != Activation::kRelu) return false;
  skip_relu_mask_ = true;
  return true;
}

absl::StatusOr<const Tensor*> Dense::Backward(const Tensor& grad_output) {
  TAAS_RETURN_IF_ERROR(internal::CheckGradient(name(), input_ != nullptr, grad_output, output_));
  const Device device = grad_output.device();
  return internal::OnDevice(
      name(), device, [&](DeviceKernels& kernels) -> absl::StatusOr<const Tensor*> {
        const Tensor* dy = &grad_output;
        if (activation_ == Activation::kRelu && !skip_relu_mask_) {
          Ensure(masked_grad_, grad_output.shape(), device);
          TAAS_RETURN_IF_ERROR(kernels.ReluMask(output_, grad_output, masked_grad_));
          dy = &masked_grad_;
        }
        Tensor* dx = nullptr;
        if (input_gradient_) {
          Ensure(input_grad_, input_->shape(), device);
          dx = &input_grad_;
        } else {
          input_grad_ = Tensor();
        }
        TAAS_RETURN_IF_ERROR(kernels.DenseBackward(*input_, kernel_.value, *dy, kernel_.gradient,
                                                   bias_.gradient, dx));
        TAAS_RETURN_IF_ERROR(internal::AddPenaltyGradient(kernels, regularizer_, kernel_));
        return &input_grad_;
      });
}

absl::Status Dense::AddRegularizationLoss(Tensor& total) {
  return internal::AddPenaltyLoss(name(), regularizer_, kernel_, total);
}

}  // namespace taas::nn
