// Update rules applied on the parameter server that holds a variable (TF's
// `apply_gradients` placement): the worker sends a gradient, the PS owning the shard applies it.
// Under all-reduce every replica applies the same rules to its own copy, on its device.
//
// Rules are element-wise, so a variable partitioned across several PS is updated shard by shard
// with the same result as a whole. Slot state (momentum, Adam's moments) lives beside the shard.
// Clipping by global norm is not element-wise: it needs all of a step's gradients, so it runs
// where they all are (ClipByGlobalNorm, called by the runtime on the worker), never on a PS.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
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
//   kCosine           CosineDecay: initial * ((1 - alpha) * 0.5 * (1 + cos(pi * s / decay_steps))
//                     + alpha) with s = min(step, decay_steps); decay_steps > 0, alpha in [0, 1].
// Linear warm-up, with any kind: for step < warmup_steps the rate rises in a straight line from
// warmup_initial (at step 0) towards the schedule's first rate, At(warmup_steps) being that rate;
// from warmup_steps on, the schedule runs as above on step - warmup_steps (its boundaries and
// decay count from the end of the warm-up). This is Keras's CosineDecay(initial_learning_rate,
// decay_steps, alpha, warmup_target, warmup_steps) for kCosine (initial = warmup_target,
// warmup_initial = initial_learning_rate; the CosineDecay factory maps the names), and the same
// rule in front of every other kind. warmup_steps == 0: no warm-up.
// The schedule travels with the OptimizerConfig to every parameter server (ps.proto).
struct LearningRateSchedule {
  enum class Kind { kExponential, kPiecewiseConstant, kPolynomial, kInverseTime, kCosine };

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
  float alpha = 0.0f;                         // kCosine
  std::int64_t warmup_steps = 0;              // every kind
  float warmup_initial = 0.0f;                // every kind

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
  // Keras's CosineDecay, its arguments in its order: with a warmup_target, the rate warms up from
  // initial_learning_rate to warmup_target over warmup_steps, then decays from warmup_target;
  // without one, warmup_steps is ignored, as in Keras.
  static LearningRateSchedule CosineDecay(float initial_learning_rate, std::int64_t decay_steps,
                                          float alpha = 0.0f,
                                          std::optional<float> warmup_target = std::nullopt,
                                          std::int64_t warmup_steps = 0);
  // This schedule behind a linear warm-up of `steps` steps starting at `from`.
  LearningRateSchedule WithWarmup(std::int64_t steps, float from = 0.0f) const;

  // The rate at `step` (>= 0); meaningful only for a schedule CreateOptimizer accepts.
  float At(std::int64_t step) const;
  // OK, or InvalidArgument naming the first bad field ("learning_rate.values").
  absl::Status Validate() const;

 private:
  // The rate of the schedule's kind at `step`, without the warm-up.
  float Decayed(std::int64_t step) const;
};

// The optimizer and its settings, with Keras's names (beta1/beta2 are Keras's beta_1/beta_2) and
// defaults. Each optimizer reads only its own fields; the last four apply to every optimizer.
//   "sgd"       var -= lr * grad.
//   "momentum"  TF's MomentumOptimizer: momentum (default 0.9), use_nesterov.
//   "adam"      Keras's Adam: beta1, beta2, epsilon (bias-corrected; no amsgrad).
//   "adamw"     Keras's AdamW: Adam with weight_decay on by default (0.004, Keras's).
//   "rmsprop"   Keras's RMSprop: rho, momentum (default 0, as Keras's), epsilon, centered.
//   "adagrad"   Keras's Adagrad: initial_accumulator_value, epsilon.
// Every optimizer: weight_decay (decoupled, as Keras's base optimizer and torch.optim.AdamW:
// var -= lr * weight_decay * var before the update; default 0 but for adamw), the variables it
// spares (exclude_from_weight_decay: a variable whose name contains one of these strings, as
// Keras's exclude_from_weight_decay(var_names=...) documents it; plain substrings, no regular
// expressions), and global_clipnorm (Keras's: a step's gradients scaled by
// global_clipnorm / max(global_norm, global_clipnorm) before the update, as
// tf.clip_by_global_norm does; 0 = off). The learning rate defaults to 0.01 for every optimizer.
struct OptimizerConfig {
  std::string name = "sgd";  // "sgd", "momentum", "adam", "adamw", "rmsprop" or "adagrad"
  LearningRateSchedule learning_rate = {};
  // momentum and rmsprop; unset: 0.9 for momentum, 0 for rmsprop.
  std::optional<float> momentum = {};
  bool use_nesterov = false;
  float beta1 = 0.9f;
  float beta2 = 0.999f;
  float epsilon = 1e-7f;                   // adam, adamw, rmsprop, adagrad
  float rho = 0.9f;                        // rmsprop
  bool centered = false;                   // rmsprop
  float initial_accumulator_value = 0.1f;  // adagrad
  std::optional<float> weight_decay = {};  // unset: 0.004 for adamw, else 0
  std::vector<std::string> exclude_from_weight_decay = {};
  float global_clipnorm = 0.0f;
};

// `config` with every unset field given its optimizer's default (what crosses the wire, so that a
// parameter server never applies a default of its own).
OptimizerConfig WithDefaults(OptimizerConfig config);

// Limits on what a config may hold (CreateOptimizer enforces them on configs from the wire too).
inline constexpr std::size_t kMaxExcludedNames = 256;
inline constexpr std::size_t kMaxExcludedNameBytes = 1024;
// The most slots an optimizer keeps per variable element (rmsprop, centered with momentum).
inline constexpr int kMaxSlots = 3;

class Optimizer {
 public:
  virtual ~Optimizer() = default;

  // Float slots kept per variable element: 0 for SGD, 1 for momentum and Adagrad, 2 for Adam and
  // AdamW, 1 to 3 for RMSprop (velocity; the momentum when momentum > 0; the mean gradient when
  // centered, in that order). At most kMaxSlots.
  virtual int slot_count() const = 0;

  // Applies one update to the variable named `name` in place: its weight decay, unless the name is
  // excluded, then the rule. `slots` holds slot_count() spans, each var.size() long and
  // zero-initialised before the first update; `var`, `grad` and the slots do not overlap. `step`
  // is the global step the gradient was computed at (0 for the first update); it drives the
  // learning-rate schedule and Adam's bias correction. Runs the host's rules (device_rules.h).
  void Apply(std::string_view name, std::span<float> var, std::span<const float> grad,
             std::span<const std::span<float>> slots, std::int64_t step) const;

  // Apply on whole tensors of any device (or views of parts of them: the rules are element-wise):
  // `grad` and the slot_count() `slots` have var's shape and device (slots zero before the first
  // update). The update runs on the device's rules (device_rules.h: the host's are Apply's loops),
  // with the learning rate computed here, and does not wait for the device. InvalidArgument
  // naming `name` (the variable) for a shape, device or slot count that does not match,
  // FailedPrecondition when no rules are registered for the device; the rules' own errors
  // prefixed with `name`.
  absl::Status ApplyTensors(const std::string& name, Tensor& var, const Tensor& grad,
                            std::span<Tensor* const> slots, std::int64_t step) const;

  // Whether the config asks for clipping by global norm (global_clipnorm > 0).
  bool clips() const { return config_.global_clipnorm > 0.0f; }
  // Clips `gradients`, all of one step's gradients of a replica, by their global norm (the norm of
  // all their elements together), in place on their device (one device for all) with its rules;
  // nothing goes to the host. Does nothing unless clips(). InvalidArgument for tensors on
  // several devices, FailedPrecondition when no rules are registered for the device.
  absl::Status ClipByGlobalNorm(std::span<Tensor* const> gradients) const;

  // Whether the variable named `name` is decayed: weight_decay > 0 and no string of
  // exclude_from_weight_decay is part of the name.
  bool DecaysWeightsOf(std::string_view name) const;

  float LearningRate(std::int64_t step) const { return config_.learning_rate.At(step); }
  // The config, its defaults filled in (WithDefaults).
  const OptimizerConfig& config() const { return config_; }

 protected:
  explicit Optimizer(const OptimizerConfig& config) : config_(WithDefaults(config)) {}
  // The optimizer's rule through `rules`, the tensors checked (the decay already applied).
  virtual absl::Status Update(DeviceUpdateRules& rules, Tensor& var, const Tensor& grad,
                              std::span<Tensor* const> slots, std::int64_t step) const = 0;

 private:
  // The weight decay, then Update.
  absl::Status Run(DeviceUpdateRules& rules, std::string_view name, Tensor& var, const Tensor& grad,
                   std::span<Tensor* const> slots, std::int64_t step) const;

  const OptimizerConfig config_;
};

// Builds the optimizer named in `config`; InvalidArgument naming the field for bad settings.
absl::StatusOr<std::unique_ptr<Optimizer>> CreateOptimizer(const OptimizerConfig& config);

}  // namespace taas::optim
