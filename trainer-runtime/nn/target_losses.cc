#include "taas/nn/target_losses.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

namespace taas::nn {

std::map<std::string, double> TargetLossResult::metrics() const {
  if (has_accuracy) {
    return {{"loss", loss},
            {"accuracy", elements > 0 ? static_cast<double>(correct) / elements : 0.0}};
  }
  return {{"loss", loss}, {"mean_absolute_error", elements > 0 ? absolute_error / elements : 0.0}};
}

absl::Status TargetLoss::CheckTarget(float target) const {
  return std::isfinite(target) ? absl::OkStatus()
                               : absl::InvalidArgumentError("is not a finite number");
}

absl::StatusOr<TargetLossResult> TargetLoss::Forward(const Tensor& outputs,
                                                     std::span<const float> targets) {
  const Shape& shape = outputs.shape();
  if (shape.empty() || shape.size() > 2) {
    return absl::InvalidArgumentError(std::string(name()) + ": outputs " + ShapeString(shape) +
                                      " are not [N, k] or [N]");
  }
  const std::int64_t rows = shape[0];
  const std::int64_t k = shape.size() == 2 ? shape[1] : 1;
  if (static_cast<std::int64_t>(targets.size()) != rows * k) {
    return absl::InvalidArgumentError(std::string(name()) + ": outputs " + ShapeString(shape) +
                                      " do not match " + std::to_string(targets.size()) +
                                      " targets");
  }
  for (std::size_t i = 0; i < targets.size(); ++i) {
    if (absl::Status s = CheckTarget(targets[i]); !s.ok()) {
      return absl::InvalidArgumentError(std::string(name()) + ": target " +
                                        std::to_string(targets[i]) + " at row " +
                                        std::to_string(i / k) + ", column " +
                                        std::to_string(i % k) + " " + std::string(s.message()));
    }
  }
  try {
    const Tensor host = outputs.device().is_cpu() ? Tensor() : outputs.To(Device::Cpu());
    const std::span<const float> x = outputs.device().is_cpu() ? outputs.values() : host.values();
    Tensor grad(shape);
    float* g = grad.data();
    TargetLossResult result;
    result.elements = rows * k;
    result.has_accuracy = classifies();
    const float scale = 1.0f / static_cast<float>(result.elements);
    double sum = 0;
    for (std::size_t i = 0; i < targets.size(); ++i) {
      const Element e = Compute(x[i], targets[i]);
      sum += e.loss;
      g[i] = e.grad * scale;
      result.absolute_error += std::fabs(x[i] - targets[i]);
      if ((x[i] > 0.0f) == (targets[i] >= 0.5f)) ++result.correct;
    }
    result.loss = static_cast<float>(sum / static_cast<double>(result.elements));
    if (!classifies()) result.correct = 0;
    grad_ = outputs.device().is_cpu() ? std::move(grad) : grad.To(outputs.device());
    return result;
  } catch (const std::exception& e) {
    return absl::InternalError(std::string(name()) + ": copying to or from " +
                               DeviceName(outputs.device()) + " failed: " + e.what());
  }
}

TargetLoss::Element MeanSquaredError::Compute(float output, float target) const {
  const float e = output - target;
  return {e * e, 2.0f * e};
}

Huber::Huber(float delta) : delta_(delta) {
  if (!(std::isfinite(delta) && delta > 0.0f)) {
    throw std::invalid_argument("huber: delta must be a finite number > 0, got " +
                                std::to_string(delta));
  }
}

TargetLoss::Element Huber::Compute(float output, float target) const {
  const float e = output - target;
  if (std::fabs(e) <= delta_) return {0.5f * e * e, e};
  return {delta_ * (std::fabs(e) - 0.5f * delta_), e > 0.0f ? delta_ : -delta_};
}

absl::Status BinaryCrossEntropy::CheckTarget(float target) const {
  return target >= 0.0f && target <= 1.0f ? absl::OkStatus()
                                          : absl::InvalidArgumentError("is not in [0, 1]");
}

TargetLoss::Element BinaryCrossEntropy::Compute(float x, float t) const {
  // exp(-|x|) never overflows; sigmoid(x) from it without exp(x) for large x either.
  const float z = std::exp(-std::fabs(x));
  const float sigmoid = x >= 0.0f ? 1.0f / (1.0f + z) : z / (1.0f + z);
  return {std::max(x, 0.0f) - x * t + std::log1p(z), sigmoid - t};
}

}  // namespace taas::nn
