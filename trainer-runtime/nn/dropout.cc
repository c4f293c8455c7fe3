#include "taas/nn/dropout.h"

#include <stdexcept>

#include "layer_internal.h"

namespace taas::nn {

Dropout::Dropout(DropoutOptions options)
    : Layer(std::move(options.name)), rate_(options.rate), rng_(options.seed) {
  if (!(rate_ >= 0.0f && rate_ < 1.0f)) {
    throw std::invalid_argument(name() + ": rate must be in [0, 1), got " + std::to_string(rate_));
  }
}

absl::StatusOr<const Tensor*> Dropout::Forward(const Tensor& input, bool training) {
  applied_ = training && rate_ > 0.0f;
  forward_ran_ = false;
  const Device device = input.device();
  TAAS_RETURN_IF_ERROR(internal::OnDevice(name(), device, [&](DeviceKernels& kernels) {
    internal::Ensure(output_, input.shape(), device);
    if (!applied_) return kernels.Copy(input, output_);
    internal::Ensure(mask_, input.shape(), device);
    // One draw of the layer's generator per batch seeds the batch's mask: the same seed gives the
    // same masks on every device whose kernels draw alike (the host's and the test device's).
    return kernels.Dropout(input, rate_, rng_(), mask_, output_);
  }));
  forward_ran_ = true;
  return &output_;
}

absl::StatusOr<const Tensor*> Dropout::Backward(const Tensor& grad_output) {
  TAAS_RETURN_IF_ERROR(internal::CheckGradient(name(), forward_ran_, grad_output, output_));
  const Device device = grad_output.device();
  return internal::OnDevice(
      name(), device, [&](DeviceKernels& kernels) -> absl::StatusOr<const Tensor*> {
        internal::Ensure(input_grad_, grad_output.shape(), device);
        TAAS_RETURN_IF_ERROR(applied_ ? kernels.Multiply(grad_output, mask_, input_grad_)
                                      : kernels.Copy(grad_output, input_grad_));
        return &input_grad_;
      });
}

}  // namespace taas::nn
