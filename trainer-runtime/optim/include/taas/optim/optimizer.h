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

#include "taas/base/status.h"

namespace taas::optim {

// TF's `tf.train.exponential_decay`: lr * decay_rate ^ (step / decay_steps), with integer
// division when `staircase`. decay_steps == 0 means a constant rate.
struct LearningRateSchedule {
  float initial = 0.01f;
  float decay_rate = 1.0f;
  std::int64_t decay_steps = 0;
  bool staircase = false;

  float At(std::int64_t step) const;
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

  virtual float LearningRate(std::int64_t step) const = 0;
};

// Builds the optimizer named in `config`; InvalidArgument naming the field for bad settings.
absl::StatusOr<std::unique_ptr<Optimizer>> CreateOptimizer(const OptimizerConfig& config);

}  // namespace taas::optim
