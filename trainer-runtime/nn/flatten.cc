#include "taas/nn/flatten.h"

#include <algorithm>

#include "layer_internal.h"

namespace taas::nn {

absl::StatusOr<const Tensor*> Flatten::Forward(const Tensor& input, bool) {
  if (input.shape().empty()) {
    forward_ran_ = false;
    return internal::InputShapeError(name(), "[N, ...] (a batch dimension)", input.shape());
  }
  input_shape_ = input.shape();
  const std::int64_t n = input.shape()[0];
  const Shape shape = {n, n == 0 ? 0 : input.size() / n};
  if (!input.device().is_cpu()) {
    forward_ran_ = false;
    TAAS_RETURN_IF_ERROR(internal::OnDevice(name(), input.device(), [&](DeviceKernels& kernels) {
      internal::Ensure(output_, shape, input.device());
      return kernels.Copy(input, output_);
    }));
    forward_ran_ = true;
    return &output_;
  }
  internal::Ensure(output_, shape);
  std::copy_n(input.data(), input.size(), output_.data());
  forward_ran_ = true;
  return &output_;
}

absl::StatusOr<const Tensor*> Flatten::Backward(const Tensor& grad_output) {
  TAAS_RETURN_IF_ERROR(internal::CheckGradient(name(), forward_ran_, grad_output, output_));
  if (!input_gradient_) {
    input_grad_ = Tensor();
    return &input_grad_;
  }
  if (!grad_output.device().is_cpu()) {
    return internal::OnDevice(name(), grad_output.device(),
                              [&](DeviceKernels& kernels) -> absl::StatusOr<const Tensor*> {
                                internal::Ensure(input_grad_, input_shape_, grad_output.device());
                                TAAS_RETURN_IF_ERROR(kernels.Copy(grad_output, input_grad_));
                                return &input_grad_;
                              });
  }
  internal::Ensure(input_grad_, input_shape_);
  std::copy_n(grad_output.data(), grad_output.size(), input_grad_.data());
  return &input_grad_;
}

}  // namespace taas::nn
