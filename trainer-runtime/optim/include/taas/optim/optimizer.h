// Update rules applied on the parameter server that holds a variable (TF's
// `apply_gradients` placement): the worker sends a gradient, the PS owning the shard applies it.
//
// Rules are element-wise, so a variable partitioned across several PS is updated shard by shard
// with the same result as a whole. Slot state (momentum, Adam's moments) lives beside the shard.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "taas/base/status.h"
#include "taas/tensor/tensor.h"

namespace taas::optim {

class DeviceUpdateRules;

// The learning rate at a global step: TensorFlow's decays, with Keras's argument names
// (tf.keras.optimizers.schedules). The default is a constant 0.01. `kind` picks the formula; each
// uses only the fields listed beside it (CreateOptimizer checks them, naming the field):
//   kExponential      ExponentialDecay: initial * decay_rate ^ (step / decay_steps), the exponent
//                     floored when `staircase`; decay_steps == 0 means a constant rate.
//   kPiecewiseConstant  PiecewiseConstantDecay(boundaries, values): values[0] while
//                     step <= boundaries[0], values[i] while boundaries[i-1] < step <=
//                     boundaries[i], values.back() after the last boundary. values.size() ==
//                     boundaries.size() + 1, boundaries strictly increasing; `initial` unused.
//   kPolynomial       PolynomialDecay: (initial - end_learning_rate) * (1 - s / decay_steps) ^
//                     power + end_learning_rate with s = min(step, decay_steps), or with `cycle`
//                     decay_steps stretched to the next multiple above step; decay_steps > 0.
//   kInverseTime      InverseTimeDecay: initial / (1 + decay_rate * step / decay_steps), the
//                     quotient floored when `staircase`; decay_steps > 0.
// The schedule travels with the OptimizerConfig to every parameter server (ps.proto).
struct LearningRateSchedule {
  enum class Kind { kExponential, kPiecewiseConstant, kPolynomial, kInverseTime };

  float initial = 0.01f;
  float decay_rate = 1.0f;
  std::int64_t decay_steps = 0;
  bool staircase = false;
  Kind kind = Kind::kExponential;
  std::vector<std::int64_t> boundaries = {};  // kPiecewiseConstant
  std::vector<float> values = {};             // kPiecewiseConstant
  float end_learning_rate = 0.0001f;          // kPolynomial
  float power = 1.0f;                         // kPolynomial
  bool cycle = false;                         // kPolynomial

  static LearningRateSchedule Constant(float rate);
  static LearningRateSchedule ExponentialDecay(float initial, std::int64_t decay_steps,
                                               float decay_rate, bool staircase = false);
  static LearningRateSchedule PiecewiseConstantDecay(std::vector<std::int64_t> boundaries,
                                                     std::vector<float> values);
  static LearningRateSchedule PolynomialDecay(float initial, std::int64_t decay_steps,
                                              float end_learning_rate = 0.0001f, float power = 1.0f,
                                              bool cycle = false);
  static LearningRateSchedule InverseTimeDecay(float initial, std::int64_t decay_steps,
                                               float decay_rate, bool staircase = false);

  // The rate at `step` (>= 0); meaningful only for a schedule CreateOptimizer accepts.
  float At(std::int64_t step) const;
  // OK, or InvalidArgument naming the first bad field ("learning_rate.values").
  absl::Status Validate() const;
};

struct OptimizerConfig {
  std::string name = "sgd";  // "sgd", "momentum" or "adam"
  LearningRateSchedule learning_rate;
  float momentum = 0.9f;
  bool use_nesterov = false;
  float beta1 = 0.9f;
  float beta2 = 0.999f;
  float epsilon = 1e-7f;
};

class Optimizer {
 public:
  virtual ~Optimizer() = default;

  // Float slots kept per variable element: 0 for SGD, 1 for momentum, 2 for Adam.
  virtual int slot_count() const = 0;

  // Applies one update in place. `slots` holds slot_count() spans, each var.size() long and
  // zero-initialised before the first update; `var`, `grad` and the slots do not overlap. `step` is
  // the global step the gradient was computed at (0 for the first update); it drives the
  // learning-rate schedule and Adam's bias correction.
  virtual void Apply(std::span<float> var, std::span<const float> grad,
                     std::span<const std::span<float>> slots, std::int64_t step) const = 0;

  // Apply on whole tensors of any device (or views of parts of them: the rules are element-wise):
  // `grad` and the slot_count() `slots` have var's shape and device (slots zero before the first
  // update). The update runs on the device's rules (device_rules.h: the host's are Apply's loops),
  // with the learning rate computed here, and does not wait for the device. InvalidArgument
  // naming `name` (the variable) for a shape, device or slot count that does not match,
  // FailedPrecondition when no rules are registered for the device; the rules' own errors
  // prefixed with `name`.
  absl::Status ApplyTensors(const std::string& name, Tensor& var, const Tensor& grad,
                            std::span<Tensor* const> slots, std::int64_t step) const;

  virtual float LearningRate(std::int64_t step) const = 0;

 protected:
  // The update of ApplyTensors through `rules`, the tensors checked.
  virtual absl::Status ApplyWithRules(DeviceUpdateRules& rules, Tensor& var, const Tensor& grad,
                                      std::span<Tensor* const> slots, std::int64_t step) const = 0;
};

// Builds the optimizer named in `config`; InvalidArgument naming the field for bad settings.
absl::StatusOr<std::unique_ptr<Optimizer>> CreateOptimizer(const OptimizerConfig& config);

}  // namespace taas::optim
