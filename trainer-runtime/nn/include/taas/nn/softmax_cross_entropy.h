// The classification loss: mean softmax cross-entropy over a batch of logits with integer labels.
#pragma once

#include <cstdint>
#include <span>

#include "taas/base/status.h"
#include "taas/tensor/tensor.h"

namespace taas::nn {

// Logits [N, classes], labels in [0, classes), one per row.
class SoftmaxCrossEntropy {
 public:
  struct Result {
    float loss = 0.0f;         // mean over the batch
    std::int64_t correct = 0;  // argmax(logits) == label
  };
  // InvalidArgument naming the row for a label outside [0, classes) or a label count that is not
  // the batch's (the batch's data is wrong: an error value, not a throw); nothing is computed then.
  absl::StatusOr<Result> Forward(const Tensor& logits, std::span<const std::int32_t> labels);
  // dL/d(logits) of the last Forward: (softmax - onehot) / N.
  const Tensor& Backward() const { return grad_; }

 private:
  Tensor grad_;
};

}  // namespace taas::nn
