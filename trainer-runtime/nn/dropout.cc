#include "taas/nn/dropout.h"

#include <algorithm>
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
  if (!input.device().is_cpu()) {
    forward_ran_ = false;
    const Device device = input.device();
    TAAS_RETURN_IF_ERROR(internal::OnDevice(name(), device, [&](DeviceKernels& kernels) {
      internal::Ensure(output_, input.shape(), device);
      if (!applied_) return kernels.Copy(input, output_);
      internal::Ensure(mask_, input.shape(), device);
      // One draw of the layer's generator per batch seeds the device's mask: the same seed gives
      // the same masks, as on the host (though not the host's masks).
      return kernels.Dropout(input, rate_, rng_(), mask_, output_);
    }));
    forward_ran_ = true;
    return &output_;
  }
  internal::Ensure(output_, input.shape());
  forward_ran_ = true;
  if (!applied_) {
    std::copy_n(input.data(), input.size(), output_.data());
    return &output_;
  }
  internal::Ensure(mask_, input.shape());
  const float scale = 1.0f / (1.0f - rate_);
  std::uniform_real_distribution<float> uniform(0.0f, 1.0f);
  float* m = mask_.data();
  float* y = output_.data();
  const float* x = input.data();
  for (std::int64_t i = 0; i < input.size(); ++i) {
    m[i] = uniform(rng_) < rate_ ? 0.0f : scale;
    y[i] = x[i] * m[i];
  }
  return &output_;
}

absl::StatusOr<const Tensor*> Dropout::Backward(const Tensor& grad_output) {
  TAAS_RETURN_IF_ERROR(internal::CheckGradient(name(), forward_ran_, grad_output, output_));
  if (!grad_output.device().is_cpu()) {
    return internal::OnDevice(
        name(), grad_output.device(), [&](DeviceKernels& kernels) -> absl::StatusOr<const Tensor*> {
          internal::Ensure(input_grad_, grad_output.shape(), grad_output.device());
          TAAS_RETURN_IF_ERROR(applied_ ? kernels.Multiply(grad_output, mask_, input_grad_)
                                        : kernels.Copy(grad_output, input_grad_));
          return &input_grad_;
        });
  }
  internal::Ensure(input_grad_, grad_output.shape());
  if (!applied_) {
    std::copy_n(grad_output.data(), grad_output.size(), input_grad_.data());
    return &input_grad_;
  }
  for (std::int64_t i = 0; i < grad_output.size(); ++i) {
    input_grad_.data()[i] = grad_output.data()[i] * mask_.data()[i];
  }
  return &input_grad_;
}

}  // namespace taas::nn
