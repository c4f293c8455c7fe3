#include "layer_internal.h"

#include <cmath>
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

void Ensure(Tensor& tensor, const Shape& shape, Device device) {
  if (tensor.shape() != shape || tensor.device() != device) tensor = Tensor(shape, device);
}

void ReluMask(const Tensor& output, const Tensor& grad, Tensor& out) {
  Ensure(out, grad.shape());
  const float* y = output.data();
  const float* g = grad.data();
  float* o = out.data();
  const std::int64_t n = grad.size();
  for (std::int64_t i = 0; i < n; ++i) o[i] = y[i] > 0.0f ? g[i] : 0.0f;
}

std::pair<std::string, std::string> KernelAndBiasNames(const std::string& layer,
                                                       const std::string& kernel_name,
                                                       const std::string& bias_name) {
  std::pair<std::string, std::string> names{kernel_name.empty() ? layer + "/kernel" : kernel_name,
                                            bias_name.empty() ? layer + "/bias" : bias_name};
  if (names.first == names.second) {
    throw std::invalid_argument(layer + ": kernel_name and bias_name are both \"" + names.first +
                                "\": a model's variables need unique names");
  }
  return names;
}

void CheckRegularizer(const std::string& layer, const Regularizer& regularizer) {
  if (!(regularizer.l2 >= 0.0f) || !std::isfinite(regularizer.l2)) {
    throw std::invalid_argument(layer +
                                ": kernel_regularizer: l2 must be a finite number >= 0, got " +
                                std::to_string(regularizer.l2));
  }
}

absl::Status AddPenaltyGradient(DeviceKernels& kernels, const Regularizer& regularizer,
                                Variable& kernel) {
  if (regularizer.l2 == 0.0f) return absl::OkStatus();
  return kernels.Axpy(2.0f * regularizer.l2, kernel.value, kernel.gradient);
}

absl::Status AddPenaltyLoss(const std::string& layer, const Regularizer& regularizer,
                            const Variable& kernel, Tensor& total) {
  if (regularizer.l2 == 0.0f) return absl::OkStatus();
  if (total.device() != kernel.value.device() || total.size() < 1) {
    return absl::InvalidArgumentError(layer + ": the regularization loss goes into a tensor of " +
                                      ShapeString(total.shape()) + " on " +
                                      DeviceName(total.device()) + ", the kernel is on " +
                                      DeviceName(kernel.value.device()));
  }
  return OnDevice(layer, total.device(), [&](DeviceKernels& kernels) {
    return kernels.AddSumOfSquares(kernel.value, regularizer.l2, total);
  });
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
  if (grad_output.device() != output.device()) {
    return absl::FailedPreconditionError(layer + ": the gradient is on " +
                                         DeviceName(grad_output.device()) + ", the output on " +
                                         DeviceName(output.device()));
  }
  if (grad_output.shape() != output.shape()) {
    return absl::InvalidArgumentError(layer + ": expected a gradient of the output's shape " +
                                      ShapeString(output.shape()) + ", got " +
                                      ShapeString(grad_output.shape()));
  }
  return absl::OkStatus();
}

absl::Status CheckVariablesOn(const std::string& layer, Device device,
                              std::initializer_list<const Variable*> variables) {
  for (const Variable* variable : variables) {
    for (const Tensor* tensor : {&variable->value, &variable->gradient}) {
      if (tensor->device() == device) continue;
      return absl::FailedPreconditionError(
          layer + ": " + variable->name + (tensor == &variable->value ? "" : " (its gradient)") +
          " is on " + DeviceName(tensor->device()) + " but the input is on " + DeviceName(device) +
          ": place the model's variables on the device of its input");
    }
  }
  return absl::OkStatus();
}

absl::Status NoKernels(const std::string& layer, Device device) {
  return absl::FailedPreconditionError(
      layer + ": the input is on " + DeviceName(device) +
      " but no kernels are registered for that device type: build with TAAS_WITH_CUDA and "
      "link the CUDA engine (taas::nn_cuda)");
}

absl::Status NameLayer(const std::string& layer, Device device, const absl::Status& status) {
  return absl::Status(status.code(),
                      layer + ": " + DeviceName(device) + ": " + std::string(status.message()));
}

}  // namespace taas::nn::internal
