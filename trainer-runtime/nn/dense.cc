#include "taas/nn/dense.h"

#include <algorithm>
#include <oneapi/dnnl/dnnl.hpp>

#include "layer_internal.h"
#include "taas/nn/compute.h"

namespace taas::nn {

using internal::Ensure;

Dense::Dense(DenseOptions options)
    : Layer(std::move(options.name)),
      in_(options.inputs),
      out_(options.units),
      activation_(options.activation),
      kernel_{this->name() + "/kernel", Tensor({in_, out_}), Tensor({in_, out_})},
      bias_{this->name() + "/bias", Tensor({out_}), Tensor({out_})} {
  internal::InitializeVariable(this->name(), "kernel_initializer", options.kernel_initializer,
                               kernel_);
  internal::InitializeVariable(this->name(), "bias_initializer", options.bias_initializer, bias_);
}

absl::StatusOr<const Tensor*> Dense::Forward(const Tensor& input, bool) {
  if (input.shape().size() != 2 || input.shape()[1] != in_) {
    input_ = nullptr;
    return internal::InputShapeError(name(), "[N, " + std::to_string(in_) + "]", input.shape());
  }
  const std::int64_t n = input.shape()[0];
  const Device device = input.device();
  input_ = nullptr;
  TAAS_RETURN_IF_ERROR(internal::CheckVariablesOn(name(), device, {&kernel_, &bias_}));
  if (!device.is_cpu()) {
    TAAS_RETURN_IF_ERROR(internal::OnDevice(name(), device, [&](DeviceKernels& kernels) {
      Ensure(output_, {n, out_}, device);
      return kernels.DenseForward(input, kernel_.value, bias_.value,
                                  activation_ == Activation::kRelu, output_);
    }));
    input_ = &input;
    return &output_;
  }
  input_ = &input;
  Ensure(output_, {n, out_});
  float* y = output_.data();
  const float* b = bias_.value.data();
  for (std::int64_t r = 0; r < n; ++r) std::copy_n(b, out_, y + r * out_);
  FollowComputeThreads();
  dnnl::sgemm('N', 'N', n, out_, in_, 1.0f, input.data(), in_, kernel_.value.data(), out_, 1.0f, y,
              out_);
  if (activation_ == Activation::kRelu) {
    const std::int64_t size = output_.size();
    for (std::int64_t i = 0; i < size; ++i) y[i] = std::max(y[i], 0.0f);
  }
  return &output_;
}

bool Dense::SkipReluMask() {
  if (activation_ != Activation::kRelu) return false;
  skip_relu_mask_ = true;
  return true;
}

absl::StatusOr<const Tensor*> Dense::Backward(const Tensor& grad_output) {
  TAAS_RETURN_IF_ERROR(internal::CheckGradient(name(), input_ != nullptr, grad_output, output_));
  if (!grad_output.device().is_cpu()) return BackwardOnDevice(grad_output);
  const std::int64_t n = grad_output.shape()[0];
  const Tensor* dy = &grad_output;
  if (activation_ == Activation::kRelu && !skip_relu_mask_) {
    internal::ReluMask(output_, grad_output, masked_grad_);
    dy = &masked_grad_;
  }
  FollowComputeThreads();
  dnnl::sgemm('T', 'N', in_, out_, n, 1.0f, input_->data(), in_, dy->data(), out_, 0.0f,
              kernel_.gradient.data(), out_);
  float* db = bias_.gradient.data();
  std::fill_n(db, out_, 0.0f);
  for (std::int64_t r = 0; r < n; ++r) {
    const float* row = dy->data() + r * out_;
    for (std::int64_t c = 0; c < out_; ++c) db[c] += row[c];
  }
  if (!input_gradient_) {
    input_grad_ = Tensor();
    return &input_grad_;
  }
  Ensure(input_grad_, input_->shape());
  dnnl::sgemm('N', 'T', n, in_, out_, 1.0f, dy->data(), out_, kernel_.value.data(), out_, 0.0f,
              input_grad_.data(), in_);
  return &input_grad_;
}

absl::StatusOr<const Tensor*> Dense::BackwardOnDevice(const Tensor& grad_output) {
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
        return &input_grad_;
      });
}

}  // namespace taas::nn
