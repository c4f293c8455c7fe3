#include "taas/nn/relu.h"

#include <algorithm>

#include "layer_internal.h"

namespace taas::nn {

absl::StatusOr<const Tensor*> ReLU::Forward(const Tensor& input, bool) {
  if (!input.device().is_cpu()) {
    forward_ran_ = false;
    TAAS_RETURN_IF_ERROR(internal::OnDevice(name(), input.device(), [&](DeviceKernels& kernels) {
      internal::Ensure(output_, input.shape(), input.device());
      return kernels.Relu(input, output_);
    }));
    forward_ran_ = true;
    return &output_;
  }
  internal::Ensure(output_, input.shape());
  const float* x = input.data();
  float* y = output_.data();
  for (std::int64_t i = 0; i < input.size(); ++i) y[i] = std::max(x[i], 0.0f);
  forward_ran_ = true;
  return &output_;
}

absl::StatusOr<const Tensor*> ReLU::Backward(const Tensor& grad_output) {
  TAAS_RETURN_IF_ERROR(internal::CheckGradient(name(), forward_ran_, grad_output, output_));
  if (!grad_output.device().is_cpu()) {
    return internal::OnDevice(
        name(), grad_output.device(), [&](DeviceKernels& kernels) -> absl::StatusOr<const Tensor*> {
          internal::Ensure(input_grad_, grad_output.shape(), grad_output.device());
          TAAS_RETURN_IF_ERROR(kernels.ReluMask(output_, grad_output, input_grad_));
          return &input_grad_;
        });
  }
  internal::ReluMask(output_, grad_output, input_grad_);
  return &input_grad_;
}

}  // namespace taas::nn
