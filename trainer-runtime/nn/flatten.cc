#include "taas/nn/flatten.h"

#include "layer_internal.h"

namespace taas::nn {

absl::StatusOr<const Tensor*> Flatten::Forward(const Tensor& input, bool) {
  forward_ran_ = false;
  if (input.shape().empty()) {
    return internal::InputShapeError(name(), "[N, ...] (a batch dimension)", input.shape());
  }
  input_shape_ = input.shape();
  const std::int64_t n = input.shape()[0];
  const Shape shape = {n, n == 0 ? 0 : input.size() / n};
  const Device device = input.device();
  TAAS_RETURN_IF_ERROR(internal::OnDevice(name(), device, [&](DeviceKernels& kernels) {
    internal::Ensure(output_, shape, device);
    return kernels.Copy(input, output_);
  }));
  forward_ran_ = true;
  return &output_;
}

absl::StatusOr<const Tensor*> Flatten::Backward(const Tensor& grad_output) {
  TAAS_RETURN_IF_ERROR(internal::CheckGradient(name(), forward_ran_, grad_output, output_));
  if (!input_gradient_) {
    input_grad_ = Tensor();
    return &input_grad_;
  }
  const Device device = grad_output.device();
  return internal::OnDevice(name(), device,
                            [&](DeviceKernels& kernels) -> absl::StatusOr<const Tensor*> {
                              internal::Ensure(input_grad_, input_shape_, device);
                              TAAS_RETURN_IF_ERROR(kernels.Copy(grad_output, input_grad_));
                              return &input_grad_;
                            });
}

}  // namespace taas::nn
