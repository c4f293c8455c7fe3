#include "taas/optim/optimizer.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <string>

#include "taas/optim/device_rules.h"
#include "taas/tensor/device_slot.h"

namespace taas::optim {

LearningRateSchedule LearningRateSchedule::Constant(float rate) {
  LearningRateSchedule s;
  s.initial = rate;
  return s;
}

LearningRateSchedule LearningRateSchedule::ExponentialDecay(float initial, std::int64_t decay_steps,
                                                            float decay_rate, bool staircase) {
  LearningRateSchedule s;
  s.initial = initial;
  s.decay_steps = decay_steps;
  s.decay_rate = decay_rate;
  s.staircase = staircase;
  return s;
}

LearningRateSchedule LearningRateSchedule::PiecewiseConstantDecay(
    std::vector<std::int64_t> boundaries, std::vector<float> values) {
  LearningRateSchedule s;
  s.kind = Kind::kPiecewiseConstant;
  s.boundaries = std::move(boundaries);
  s.values = std::move(values);
  return s;
}

LearningRateSchedule LearningRateSchedule::PolynomialDecay(float initial, std::int64_t decay_steps,
                                                           float end_learning_rate, float power,
                                                           bool cycle) {
  LearningRateSchedule s;
  s.kind = Kind::kPolynomial;
  s.initial = initial;
  s.decay_steps = decay_steps;
  s.end_learning_rate = end_learning_rate;
  s.power = power;
  s.cycle = cycle;
  return s;
}

LearningRateSchedule LearningRateSchedule::InverseTimeDecay(float initial, std::int64_t decay_steps,
                                                            float decay_rate, bool staircase) {
  LearningRateSchedule s;
  s.kind = Kind::kInverseTime;
  s.initial = initial;
  s.decay_steps = decay_steps;
  s.decay_rate = decay_rate;
  s.staircase = staircase;
  return s;
}

float LearningRateSchedule::At(std::int64_t step) const {
  const auto x = static_cast<double>(step);
  switch (kind) {
    case Kind::kExponential: {
      if (decay_steps <= 0) return initial;
      double exponent = x / static_cast<double>(decay_steps);
      if (staircase) exponent = std::floor(exponent);
      return static_cast<float>(initial * std::pow(static_cast<double>(decay_rate), exponent));
    }
    case Kind::kPiecewiseConstant: {
      // TF's rule: a step equal to a boundary still takes the value before it.
      const auto after = std::lower_bound(boundaries.begin(), boundaries.end(), step);
      const auto i = static_cast<std::size_t>(after - boundaries.begin());
      return i < values.size() ? values[i] : 0.0f;
    }
    case Kind::kPolynomial: {
      if (decay_steps <= 0) return initial;
      double steps = static_cast<double>(decay_steps);
      double s = x;
      if (cycle) {
        steps *= step == 0 ? 1.0 : std::ceil(x / steps);
      } else {
        s = std::min(s, steps);
      }
      const double end = end_learning_rate;
      return static_cast<float>((initial - end) * std::pow(1.0 - s / steps, power) + end);
    }
    case Kind::kInverseTime: {
      if (decay_steps <= 0) return initial;
      double quotient = x / static_cast<double>(decay_steps);
      if (staircase) quotient = std::floor(quotient);
      return static_cast<float>(initial / (1.0 + decay_rate * quotient));
    }
  }
  return initial;
}

namespace {

// The update rules' loops, the host's only copy: Optimizer::Apply (the parameter servers, on
// spans) and the host's DeviceUpdateRules (tensors, below) run these.
void SgdLoop(float lr, std::span<float> var, std::span<const float> grad) {
  float* __restrict v = var.data();
  const float* __restrict g = grad.data();
  const std::size_t n = var.size();
  for (std::size_t i = 0; i < n; ++i) v[i] -= lr * g[i];
}

void MomentumLoop(float lr, float mu, bool nesterov, std::span<float> var,
                  std::span<const float> grad, std::span<float> accum) {
  float* __restrict v = var.data();
  const float* __restrict g = grad.data();
  float* __restrict a = accum.data();
  const std::size_t n = var.size();
  if (nesterov) {
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

void AdamLoop(float lr_t, float beta1, float beta2, float eps, std::span<float> var,
              std::span<const float> grad, std::span<float> m_slot, std::span<float> v_slot) {
  float* __restrict v = var.data();
  const float* __restrict g = grad.data();
  float* __restrict m = m_slot.data();
  float* __restrict s = v_slot.data();
  const std::size_t n = var.size();
  for (std::size_t i = 0; i < n; ++i) {
    m[i] = beta1 * m[i] + (1.0f - beta1) * g[i];
    s[i] = beta2 * s[i] + (1.0f - beta2) * g[i] * g[i];
    v[i] -= lr_t * m[i] / (std::sqrt(s[i]) + eps);
  }
}

// The loops behind the seam, for host tensors (UpdateRulesFor(kCpu)).
class CpuRules final : public DeviceUpdateRules {
 public:
  absl::Status Sgd(float lr, Tensor& var, const Tensor& grad) override {
    SgdLoop(lr, var.values(), grad.values());
    return absl::OkStatus();
  }
  absl::Status Momentum(float lr, float momentum, bool nesterov, Tensor& var, const Tensor& grad,
                        Tensor& accum) override {
    MomentumLoop(lr, momentum, nesterov, var.values(), grad.values(), accum.values());
    return absl::OkStatus();
  }
  absl::Status Adam(float lr_t, float beta1, float beta2, float epsilon, Tensor& var,
                    const Tensor& grad, Tensor& m, Tensor& v) override {
    AdamLoop(lr_t, beta1, beta2, epsilon, var.values(), grad.values(), m.values(), v.values());
    return absl::OkStatus();
  }
};

class SgdOptimizer final : public Optimizer {
 public:
  explicit SgdOptimizer(const OptimizerConfig& config) : config_(config) {}
  int slot_count() const override { return 0; }
  float LearningRate(std::int64_t step) const override { return config_.learning_rate.At(step); }

  void Apply(std::span<float> var, std::span<const float> grad, std::span<const std::span<float>>,
             std::int64_t step) const override {
    SgdLoop(LearningRate(step), var, grad);
  }

 protected:
  absl::Status ApplyWithRules(DeviceUpdateRules& rules, Tensor& var, const Tensor& grad,
                              std::span<Tensor* const>, std::int64_t step) const override {
    return rules.Sgd(LearningRate(step), var, grad);
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
    MomentumLoop(LearningRate(step), config_.momentum, config_.use_nesterov, var, grad, slots[0]);
  }

 protected:
  absl::Status ApplyWithRules(DeviceUpdateRules& rules, Tensor& var, const Tensor& grad,
                              std::span<Tensor* const> slots, std::int64_t step) const override {
    return rules.Momentum(LearningRate(step), config_.momentum, config_.use_nesterov, var, grad,
                          *slots[0]);
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
    AdamLoop(CorrectedRate(step), config_.beta1, config_.beta2, config_.epsilon, var, grad,
             slots[0], slots[1]);
  }

 protected:
  absl::Status ApplyWithRules(DeviceUpdateRules& rules, Tensor& var, const Tensor& grad,
                              std::span<Tensor* const> slots, std::int64_t step) const override {
    return rules.Adam(CorrectedRate(step), config_.beta1, config_.beta2, config_.epsilon, var, grad,
                      *slots[0], *slots[1]);
  }

 private:
  // The learning rate with the bias correction of step + 1, in double as TF computes it.
  float CorrectedRate(std::int64_t step) const {
    const double t = static_cast<double>(step + 1);
    const double b1 = config_.beta1;
    const double b2 = config_.beta2;
    return static_cast<float>(LearningRate(step) * std::sqrt(1.0 - std::pow(b2, t)) /
                              (1.0 - std::pow(b1, t)));
  }

  OptimizerConfig config_;
};

absl::Status Invalid(const std::string& field, const std::string& message) {
  return absl::InvalidArgumentError("optimizer config: " + field + " " + message);
}

// A rate the optimizer may multiply a gradient by.
bool IsRate(float rate) { return rate >= 0.0f && std::isfinite(rate); }

}  // namespace

absl::Status LearningRateSchedule::Validate() const {
  const auto need_rate = [](const std::string& field, float value) {
    return IsRate(value)
               ? absl::OkStatus()
               : Invalid(field, "must be a finite number >= 0, got " + std::to_string(value));
  };
  const auto need_positive_steps = [this](const std::string& kind_name) {
    return decay_steps > 0
               ? absl::OkStatus()
               : Invalid("learning_rate.decay_steps",
                         "must be > 0 for " + kind_name + ", got " + std::to_string(decay_steps));
  };
  switch (kind) {
    case Kind::kExponential:
      TAAS_RETURN_IF_ERROR(need_rate("learning_rate.initial", initial));
      if (!(decay_rate > 0.0f) || !std::isfinite(decay_rate)) {
        return Invalid("learning_rate.decay_rate",
                       "must be a finite number > 0, got " + std::to_string(decay_rate));
      }
      if (decay_steps < 0) {
        return Invalid("learning_rate.decay_steps",
                       "must be >= 0, got " + std::to_string(decay_steps));
      }
      return absl::OkStatus();
    case Kind::kPiecewiseConstant:
      if (values.size() != boundaries.size() + 1) {
        return Invalid("learning_rate.values",
                       "must hold one more value than learning_rate.boundaries (" +
                           std::to_string(boundaries.size()) + " boundaries), got " +
                           std::to_string(values.size()));
      }
      for (std::size_t i = 1; i < boundaries.size(); ++i) {
        if (boundaries[i] <= boundaries[i - 1]) {
          return Invalid("learning_rate.boundaries[" + std::to_string(i) + "]",
                         "must be greater than the boundary before it (" +
                             std::to_string(boundaries[i - 1]) + "), got " +
                             std::to_string(boundaries[i]));
        }
      }
      for (std::size_t i = 0; i < values.size(); ++i) {
        TAAS_RETURN_IF_ERROR(
            need_rate("learning_rate.values[" + std::to_string(i) + "]", values[i]));
      }
      return absl::OkStatus();
    case Kind::kPolynomial:
      TAAS_RETURN_IF_ERROR(need_rate("learning_rate.initial", initial));
      TAAS_RETURN_IF_ERROR(need_rate("learning_rate.end_learning_rate", end_learning_rate));
      TAAS_RETURN_IF_ERROR(need_positive_steps("polynomial decay"));
      if (!(power > 0.0f) || !std::isfinite(power)) {
        return Invalid("learning_rate.power",
                       "must be a finite number > 0, got " + std::to_string(power));
      }
      return absl::OkStatus();
    case Kind::kInverseTime:
      TAAS_RETURN_IF_ERROR(need_rate("learning_rate.initial", initial));
      TAAS_RETURN_IF_ERROR(need_positive_steps("inverse time decay"));
      if (!IsRate(decay_rate)) {
        return Invalid("learning_rate.decay_rate",
                       "must be a finite number >= 0, got " + std::to_string(decay_rate));
      }
      return absl::OkStatus();
  }
  return Invalid("learning_rate.kind",
                 "must be exponential, piecewise constant, polynomial or inverse time, got " +
                     std::to_string(static_cast<int>(kind)));
}

namespace {

DeviceSlot<DeviceUpdateRules*> device_rules;

}  // namespace

DeviceUpdateRules& HostUpdateRules() {
  static CpuRules rules;
  return rules;
}

DeviceUpdateRules* UpdateRulesFor(DeviceType type) {
  return type == DeviceType::kCpu ? &HostUpdateRules() : device_rules.Get(type);
}

DeviceUpdateRules* RegisterDeviceUpdateRules(DeviceType type, DeviceUpdateRules* rules) {
  return device_rules.Exchange(type, rules);
}

absl::Status Optimizer::ApplyTensors(const std::string& name, Tensor& var, const Tensor& grad,
                                     std::span<Tensor* const> slots, std::int64_t step) const {
  const Device device = var.device();
  const auto mismatch = [&](const std::string& what, const Tensor& tensor) {
    return absl::InvalidArgumentError(name + ": " + what + " is " + ShapeString(tensor.shape()) +
                                      " on " + DeviceName(tensor.device()) + ", the variable " +
                                      ShapeString(var.shape()) + " on " + DeviceName(device));
  };
  if (grad.shape() != var.shape() || grad.device() != device) return mismatch("the gradient", grad);
  if (static_cast<int>(slots.size()) != slot_count()) {
    return absl::InvalidArgumentError(name + ": the optimizer keeps " +
                                      std::to_string(slot_count()) + " slots per variable, got " +
                                      std::to_string(slots.size()));
  }
  for (std::size_t i = 0; i < slots.size(); ++i) {
    if (slots[i]->shape() != var.shape() || slots[i]->device() != device) {
      return mismatch("slot " + std::to_string(i), *slots[i]);
    }
  }
  DeviceUpdateRules* rules = UpdateRulesFor(device.type);
  if (rules == nullptr) {
    return absl::FailedPreconditionError(
        name + ": the variable is on " + DeviceName(device) +
        " but no update rules are registered for that device type: build with TAAS_WITH_CUDA and "
        "link the CUDA engine (taas::nn_cuda)");
  }
  if (absl::Status status = ApplyWithRules(*rules, var, grad, slots, step); !status.ok()) {
    return absl::Status(status.code(),
                        name + ": " + DeviceName(device) + ": " + std::string(status.message()));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<Optimizer>> CreateOptimizer(const OptimizerConfig& config) {
  TAAS_RETURN_IF_ERROR(config.learning_rate.Validate());
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
