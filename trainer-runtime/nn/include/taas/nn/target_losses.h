// The losses of float targets (a regression's values, a binary label as 0 or 1), beside the
// softmax cross-entropy of classes: Keras's MeanSquaredError, Huber(delta) and
// BinaryCrossentropy(from_logits=True). Each is the mean over every element of the batch's
// outputs, [N, k] (or [N]), against targets of as many floats in row-major order
// (data::Batch::targets, LabelKind::kFloatTarget).
//
//   nn::BinaryCrossEntropy loss;
//   TAAS_ASSIGN_OR_RETURN(const Tensor* logits, network.Forward(batch.images, true));
//   TAAS_ASSIGN_OR_RETURN(nn::TargetLossResult result, loss.Forward(*logits, batch.targets));
//   TAAS_RETURN_IF_ERROR(network.Backward(loss.Backward()).status());
//
// They compute on the host: outputs on another device are copied to the host and the gradient
// back, one copy of N x k floats each way (a regression or binary head is small beside its
// network).
#pragma once

#include <cstdint>
#include <map>
#include <span>
#include <string>

#include "taas/base/status.h"
#include "taas/tensor/tensor.h"

namespace taas::nn {

struct TargetLossResult {
  float loss = 0.0f;          // the mean over the elements
  std::int64_t elements = 0;  // N x k
  double absolute_error = 0;  // the sum of |output - target| (a regression's MAE numerator)
  // BinaryCrossEntropy only: elements whose prediction at 0.5 (logit > 0) is the target's
  // (target >= 0.5).
  std::int64_t correct = 0;
  bool has_accuracy = false;

  // What a model's evaluate() reports for the batch (data::BatchMetrics, averaged over the set by
  // data::EvaluateInBatches): {"loss"} and {"mean_absolute_error"} for a regression,
  // {"loss", "accuracy"} for BinaryCrossEntropy.
  std::map<std::string, double> metrics() const;
};

class TargetLoss {
 public:
  virtual ~TargetLoss() = default;

  // InvalidArgument naming the loss, and the row and column where one is at fault, for outputs
  // that are not [N, k] or [N], a target count that is not N x k, a target that is not finite
  // (for BinaryCrossEntropy, not in [0, 1]); nothing is computed then. Internal when a copy to or
  // from the outputs' device fails.
  absl::StatusOr<TargetLossResult> Forward(const Tensor& outputs, std::span<const float> targets);
  // dL/d(outputs) of the last Forward, on the outputs' device.
  const Tensor& Backward() const { return grad_; }

 protected:
  // One element's loss and its derivative by the output (the mean's 1/n applied by Forward).
  struct Element {
    float loss = 0.0f;
    float grad = 0.0f;
  };
  virtual const char* name() const = 0;
  virtual absl::Status CheckTarget(float target) const;
  virtual Element Compute(float output, float target) const = 0;
  virtual bool classifies() const { return false; }

 private:
  Tensor grad_;
};

// (output - target)^2.
class MeanSquaredError final : public TargetLoss {
 protected:
  const char* name() const override { return "mean_squared_error"; }
  Element Compute(float output, float target) const override;
};

// 0.5 e^2 where |e| <= delta, else delta (|e| - 0.5 delta), e = output - target: squared near the
// target, linear beyond delta, so outliers pull less than under the squared error.
class Huber final : public TargetLoss {
 public:
  // A delta that is not a finite number > 0 throws std::invalid_argument (a programming error,
  // as a layer's bad options).
  explicit Huber(float delta = 1.0f);

 protected:
  const char* name() const override { return "huber"; }
  Element Compute(float output, float target) const override;

 private:
  float delta_;
};

// The cross-entropy of sigmoid(logit) against a target in [0, 1], from the logit without the
// sigmoid, in the stable form max(x, 0) - x t + log(1 + exp(-|x|)) (TensorFlow's
// sigmoid_cross_entropy_with_logits): finite for any finite logit.
class BinaryCrossEntropy final : public TargetLoss {
 protected:
  const char* name() const override { return "binary_cross_entropy"; }
  absl::Status CheckTarget(float target) const override;
  Element Compute(float output, float target) const override;
  bool classifies() const override { return true; }
};

}  // namespace taas::nn
