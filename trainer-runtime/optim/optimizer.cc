#include "taas/optim/optimizer.h"

#include <cmath>
#include <string>

namespace taas::optim {

float LearningRateSchedule::At(std::int64_t step) const {
  if (decay_steps <= 0) return initial;
  double exponent = static_cast<double>(step) / static_cast<double>(decay_steps);
  if (staircase) exponent = std::floor(exponent);
  return static_cast<float>(initial * std::pow(static_cast<double>(decay_rate), exponent));
}

namespace {

class SgdOptimizer final : public Optimizer {
 public:
  explicit SgdOptimizer(const OptimizerConfig& config) : config_(config) {}
  int slot_count() const override { return 0; }
  float LearningRate(std::int64_t step) const override { return config_.learning_rate.At(step); }

  void Apply(std::span<float> var, std::span<const float> grad, std::span<const std::span<float>>,
             std::int64_t step) const override {
    const float lr = LearningRate(step);
    float* __restrict v = var.data();
    const float* __restrict g = grad.data();
    const std::size_t n = var.size();
    for (std::size_t i = 0; i < n; ++i) v[i] -= lr * g[i];
  }

 private:
  OptimizerConfig config_;
};

// TF's MomentumOptimizer: accum = momentum * accum + grad; var -= lr * accum, or with Nesterov
// var -= lr * (grad + momentum * accum) using the updated accumulator.
class MomentumOptimizer final : public Optimizer {
 public:
  explicit MomentumOptimizer(const OptimizerConfig& config) : config_(config) {}
  int slot_count() const override { return 1; }
  float LearningRate(std::int64_t step) const override { return config_.learning_rate.At(step); }

  void Apply(std::span<float> var, std::span<const float> grad,
             std::span<const std::span<float>> slots, std::int64_t step) const override {
    const float lr = LearningRate(step);
    const float mu = config_.momentum;
    float* __restrict v = var.data();
    const float* __restrict g = grad.data();
    float* __restrict a = slots[0].data();
    const std::size_t n = var.size();
    if (config_.use_nesterov) {
      for (std::size_t i = 0; i < n; ++i) {
        a[i] = mu * a[i] + g[i];
        v[i] -= lr * (g[i] + mu * a[i]);
      }
    } else {
      for (std::size_t i = 0; i < n; ++i) {
        a[i] = mu * a[i] + g[i];
        v[i] -= lr * a[i];
      }
    }
  }

 private:
  OptimizerConfig config_;
};

// TF/Keras Adam: with t = step + 1, lr_t = lr * sqrt(1 - beta2^t) / (1 - beta1^t);
// m = b1 m + (1 - b1) g; v = b2 v + (1 - b2) g^2; var -= lr_t * m / (sqrt(v) + epsilon).
class AdamOptimizer final : public Optimizer {
 public:
  explicit AdamOptimizer(const OptimizerConfig& config) : config_(config) {}
  int slot_count() const override { return 2; }
  float LearningRate(std::int64_t step) const override { return config_.learning_rate.At(step); }

  void Apply(std::span<float> var, std::span<const float> grad,
             std::span<const std::span<float>> slots, std::int64_t step) const override {
    const double t = static_cast<double>(step + 1);
    const double b1 = config_.beta1;
    const double b2 = config_.beta2;
    const float lr_t = static_cast<float>(LearningRate(step) * std::sqrt(1.0 - std::pow(b2, t)) /
                                          (1.0 - std::pow(b1, t)));
    const float beta1 = config_.beta1;
    const float beta2 = config_.beta2;
    const float eps = config_.epsilon;
    float* __restrict v = var.data();
    const float* __restrict g = grad.data();
    float* __restrict m = slots[0].data();
    float* __restrict s = slots[1].data();
    const std::size_t n = var.size();
    for (std::size_t i = 0; i < n; ++i) {
      m[i] = beta1 * m[i] + (1.0f - beta1) * g[i];
      s[i] = beta2 * s[i] + (1.0f - beta2) * g[i] * g[i];
      v[i] -= lr_t * m[i] / (std::sqrt(s[i]) + eps);
    }
  }

 private:
  OptimizerConfig config_;
};

absl::Status Invalid(const std::string& field, const std::string& message) {
  return absl::InvalidArgumentError("optimizer config: " + field + " " + message);
}

}  // namespace

absl::StatusOr<std::unique_ptr<Optimizer>> CreateOptimizer(const OptimizerConfig& config) {
  const LearningRateSchedule& lr = config.learning_rate;
  if (!(lr.initial >= 0.0f) || !std::isfinite(lr.initial)) {
    return Invalid("learning_rate.initial",
                   "must be a finite number >= 0, got " + std::to_string(lr.initial));
  }
  if (!(lr.decay_rate > 0.0f)) {
    return Invalid("learning_rate.decay_rate", "must be > 0, got " + std::to_string(lr.decay_rate));
  }
  if (lr.decay_steps < 0) {
    return Invalid("learning_rate.decay_steps",
                   "must be >= 0, got " + std::to_string(lr.decay_steps));
  }
  if (config.name == "sgd") return std::unique_ptr<Optimizer>(new SgdOptimizer(config));
  if (config.name == "momentum") {
    if (!(config.momentum >= 0.0f)) {
      return Invalid("momentum", "must be >= 0, got " + std::to_string(config.momentum));
    }
    return std::unique_ptr<Optimizer>(new MomentumOptimizer(config));
  }
  if (config.name == "adam") {
    if (!(config.beta1 >= 0.0f && config.beta1 < 1.0f)) {
      return Invalid("beta1", "must be in [0, 1), got " + std::to_string(config.beta1));
    }
    if (!(config.beta2 >= 0.0f && config.beta2 < 1.0f)) {
      return Invalid("beta2", "must be in [0, 1), got " + std::to_string(config.beta2));
    }
    if (!(config.epsilon > 0.0f)) {
      return Invalid("epsilon", "must be > 0, got " + std::to_string(config.epsilon));
    }
    return std::unique_ptr<Optimizer>(new AdamOptimizer(config));
  }
  return Invalid("name", "must be \"sgd\", \"momentum\" or \"adam\", got \"" + config.name + "\"");
}

}  // namespace taas::optim
