#include "layer_internal.h"

#include <functional>
#include <stdexcept>

namespace taas::nn::internal {

void InitializeVariable(const std::string& layer, const char* field, const Initializer& initializer,
                        Variable& variable) {
  if (absl::Status status = initializer.Validate(); !status.ok()) {
    throw std::invalid_argument(layer + ": " + field + ": " + std::string(status.message()));
  }
  initializer.Fill(variable.value, std::hash<std::string>{}(variable.name));
}

void Ensure(Tensor& tensor, const Shape& shape) {
  if (tensor.shape() != shape) tensor = Tensor(shape);
}

void ReluMask(const Tensor& output, const Tensor& grad, Tensor& out) {
  Ensure(out, grad.shape());
  const float* y = output.data();
  const float* g = grad.data();
  float* o = out.data();
  const std::int64_t n = grad.size();
  for (std::int64_t i = 0; i < n; ++i) o[i] = y[i] > 0.0f ? g[i] : 0.0f;
}

absl::Status InputShapeError(const std::string& layer, const std::string& expected,
                             const Shape& actual) {
  return absl::InvalidArgumentError(layer + ": expected input " + expected + ", got " +
                                    ShapeString(actual));
}

absl::Status CheckGradient(const std::string& layer, bool forward_ran, const Tensor& grad_output,
                           const Tensor& output) {
  if (!forward_ran) {
    return absl::FailedPreconditionError(layer + ": Backward without a successful Forward");
  }
  if (grad_output.shape() != output.shape()) {
    return absl::InvalidArgumentError(layer + ": expected a gradient of the output's shape " +
                                      ShapeString(output.shape()) + ", got " +
                                      ShapeString(grad_output.shape()));
  }
  return absl::OkStatus();
}

}  // namespace taas::nn::internal
