#include "taas/nn/softmax_cross_entropy.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "layer_internal.h"

namespace taas::nn {

absl::StatusOr<SoftmaxCrossEntropy::Result> SoftmaxCrossEntropy::Forward(
    const Tensor& logits, std::span<const std::int32_t> labels) {
  if (logits.shape().size() != 2 || logits.shape()[0] != static_cast<std::int64_t>(labels.size())) {
    return absl::InvalidArgumentError("softmax_cross_entropy: logits " +
                                      ShapeString(logits.shape()) + " do not match " +
                                      std::to_string(labels.size()) + " labels");
  }
  const std::int64_t n = logits.shape()[0], classes = logits.shape()[1];
  for (std::size_t r = 0; r < labels.size(); ++r) {
    if (labels[r] < 0 || labels[r] >= classes) {
      return absl::InvalidArgumentError("softmax_cross_entropy: label " +
                                        std::to_string(labels[r]) + " at row " + std::to_string(r) +
                                        " is outside [0, " + std::to_string(classes) + ")");
    }
  }
  if (!logits.device().is_cpu()) {
    return internal::OnDevice(
        "softmax_cross_entropy", logits.device(),
        [&](DeviceKernels& kernels) -> absl::StatusOr<Result> {
          internal::Ensure(grad_, logits.shape(), logits.device());
          TAAS_ASSIGN_OR_RETURN(const auto sums,
                                kernels.SoftmaxCrossEntropy(logits, labels, grad_));
          return Result{n > 0 ? static_cast<float>(sums.loss / static_cast<double>(n)) : 0.0f,
                        sums.correct};
        });
  }
  internal::Ensure(grad_, logits.shape());
  Result result;
  double total = 0.0;
  const float inv_n = n > 0 ? 1.0f / static_cast<float>(n) : 0.0f;
  for (std::int64_t r = 0; r < n; ++r) {
    const float* z = logits.data() + r * classes;
    float* g = grad_.data() + r * classes;
    const std::int32_t label = labels[r];
    const std::int64_t argmax = std::max_element(z, z + classes) - z;
    const float max = z[argmax];
    double sum = 0.0;
    for (std::int64_t c = 0; c < classes; ++c) {
      g[c] = std::exp(z[c] - max);
      sum += g[c];
    }
    total += std::log(sum) - (z[label] - max);
    const float inv_sum = static_cast<float>(1.0 / sum);
    for (std::int64_t c = 0; c < classes; ++c) g[c] = g[c] * inv_sum * inv_n;
    g[label] -= inv_n;
    if (argmax == label) ++result.correct;
  }
  result.loss = n > 0 ? static_cast<float>(total / static_cast<double>(n)) : 0.0f;
  return result;
}

}  // namespace taas::nn
