#include "taas/nn/relu.h"

#include "layer_internal.h"

namespace taas::nn {

absl::StatusOr<const Tensor*> ReLU::Forward(const Tensor& input, bool) {
  forward_ran_ = false;
  const Device device = input.device();
  TAAS_RETURN_IF_ERROR(internal::OnDevice(name(), device, [&](DeviceKernels& kernels) {
    internal::Ensure(output_, input.shape(), device);
    return kernels.Relu(input, output_);
  }));
  forward_ran_ = true;
  return &output_;
}

absl::StatusOr<const Tensor*> ReLU::Backward(const Tensor& grad_output) {
  TAAS_RETURN_IF_ERROR(internal::CheckGradient(name(), forward_ran_, grad_output, output_));
  const Device device = grad_output.device();
  return internal::OnDevice(
      name(), device, [&](DeviceKernels& kernels) -> absl::StatusOr<const Tensor*> {
        internal::Ensure(input_grad_, grad_output.shape(), device);
        TAAS_RETURN_IF_ERROR(kernels.ReluMask(output_, grad_output, input_grad_));
        return &input_grad_;
      });
}

}  // namespace taas::nn
