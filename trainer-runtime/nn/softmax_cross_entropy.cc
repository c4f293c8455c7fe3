#include "taas/nn/softmax_cross_entropy.h"

#include <string>

#include "layer_internal.h"

namespace taas::nn {

absl::StatusOr<Tensor*> SoftmaxCrossEntropy::Compute(const Tensor& logits,
                                                     std::span<const std::int32_t> labels) {
  if (logits.shape().size() != 2 || logits.shape()[0] != static_cast<std::int64_t>(labels.size())) {
    return absl::InvalidArgumentError("softmax_cross_entropy: logits " +
                                      ShapeString(logits.shape()) + " do not match " +
                                      std::to_string(labels.size()) + " labels");
  }
  const std::int64_t classes = logits.shape()[1];
  for (std::size_t r = 0; r < labels.size(); ++r) {
    if (labels[r] < 0 || labels[r] >= classes) {
      return absl::InvalidArgumentError("softmax_cross_entropy: label " +
                                        std::to_string(labels[r]) + " at row " + std::to_string(r) +
                                        " is outside [0, " + std::to_string(classes) + ")");
    }
  }
  const Device device = logits.device();
  return internal::OnDevice(
      "softmax_cross_entropy", device, [&](DeviceKernels& kernels) -> absl::StatusOr<Tensor*> {
        internal::Ensure(grad_, logits.shape(), device);
        internal::Ensure(stats_, {kLossStats}, device);
        TAAS_RETURN_IF_ERROR(kernels.SoftmaxCrossEntropy(logits, labels, grad_, stats_));
        return &stats_;
      });
}

absl::StatusOr<SoftmaxCrossEntropy::Result> SoftmaxCrossEntropy::Forward(
    const Tensor& logits, std::span<const std::int32_t> labels) {
  TAAS_ASSIGN_OR_RETURN(const Tensor* stats, Compute(logits, labels));
  Tensor host({kLossStats});
  TAAS_RETURN_IF_ERROR(CopyInto(*stats, host));
  return Result{host.data()[kLossMean], static_cast<std::int64_t>(host.data()[kLossCorrect])};
}

}  // namespace taas::nn
