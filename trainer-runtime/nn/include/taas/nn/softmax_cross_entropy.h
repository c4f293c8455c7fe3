// The classification loss: mean softmax cross-entropy over a batch of logits with integer labels.
#pragma once

#include <cstdint>
#include <span>

#include "taas/base/status.h"
#include "taas/nn/device_kernels.h"
#include "taas/tensor/tensor.h"

namespace taas::nn {

// Logits [N, classes], labels in [0, classes), one per row.
class SoftmaxCrossEntropy {
 public:
  struct Result {
    float loss = 0.0f;         // mean over the batch (plus what the caller added, for Compute)
    std::int64_t correct = 0;  // argmax(logits) == label
  };
  // InvalidArgument naming the row for a label outside [0, classes) or a label count that is not
  // the batch's (the batch's data is wrong: an error value, not a throw); nothing is computed then.
  // On a device this waits for it: the result comes to the host (evaluation, single-process
  // training). Training on a device uses Compute.
  absl::StatusOr<Result> Forward(const Tensor& logits, std::span<const std::int32_t> labels);
  // The same checks and computation without waiting for the device: the loss's statistics as
  // kLossStats elements on the logits' device (device_kernels.h: [kLossMean] the mean loss,
  // [kLossCorrect] the rows whose argmax is the label, [kLossAccuracy] their fraction), valid until
  // the next call. The caller may add to [kLossMean] (a model's regularization losses,
  // Sequential::AddRegularizationLoss) and hand views of it to the runtime
  // (StepResult::device_loss).
  absl::StatusOr<Tensor*> Compute(const Tensor& logits, std::span<const std::int32_t> labels);
  // dL/d(logits) of the last Forward or Compute: (softmax - onehot) / N.
  const Tensor& Backward() const { return grad_; }

 private:
  Tensor grad_;
  Tensor stats_;
};

}  // namespace taas::nn
