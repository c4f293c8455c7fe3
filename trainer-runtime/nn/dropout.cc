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
  internal::Ensure(output_, input.shape());
  forward_ran_ = true;
  applied_ = training && rate_ > 0.0f;
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
