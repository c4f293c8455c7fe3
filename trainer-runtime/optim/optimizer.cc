#include "taas/optim/optimizer.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <numbers>
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

LearningRateSchedule LearningRateSchedule::CosineDecay(float initial_learning_rate,
                                                       std::int64_t decay_steps, float alpha,
                                                       std::optional<float> warmup_target,
                                                       std::int64_t warmup_steps) {
  LearningRateSchedule s;
  s.kind = Kind::kCosine;
  s.initial = initial_learning_rate;
  s.decay_steps = decay_steps;
  s.alpha = alpha;
  if (!warmup_target) return s;
  s.initial = *warmup_target;
  return s.WithWarmup(warmup_steps, initial_learning_rate);
}

LearningRateSchedule LearningRateSchedule::WithWarmup(std::int64_t steps, float from) const {
  LearningRateSchedule s = *this;
  s.warmup_steps = steps;
  s.warmup_initial = from;
  return s;
}

float LearningRateSchedule::Decayed(std::int64_t step) const {
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
    case Kind::kCosine: {
      if (decay_steps <= 0) return initial;
      const double steps = static_cast<double>(decay_steps);
      const double fraction = std::min(x, steps) / steps;
      const double cosine = 0.5 * (1.0 + std::cos(std::numbers::pi * fraction));
      const double a = alpha;
      return static_cast<float>(initial * ((1.0 - a) * cosine + a));
    }
  }
  return initial;
}

float LearningRateSchedule::At(std::int64_t step) const {
  if (step >= warmup_steps) return Decayed(step - warmup_steps);
  // Keras's _warmup_function: (target - from) * step / warmup_steps + from.
  const double from = warmup_initial;
  const double fraction = static_cast<double>(step) / static_cast<double>(warmup_steps);
  return static_cast<float>((Decayed(0) - from) * fraction + from);
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

// One loop per combination of RMSprop's options, so that none branches per element (the
// vectoriser needs straight loops); `mom` and `avg` are unused where their option is off.
template <bool kMomentum, bool kCentered>
void RmsPropLoop(float lr, float rho, float mu, float eps, std::size_t n, float* __restrict v,
                 const float* __restrict g, float* __restrict vel, float* __restrict mom,
                 float* __restrict avg) {
  for (std::size_t i = 0; i < n; ++i) {
    vel[i] = rho * vel[i] + (1.0f - rho) * (g[i] * g[i]);
    float denominator = vel[i] + eps;
    if constexpr (kCentered) {
      avg[i] = rho * avg[i] + (1.0f - rho) * g[i];
      denominator = vel[i] - avg[i] * avg[i] + eps;
    }
    const float increment = lr * g[i] / std::sqrt(denominator);
    if constexpr (kMomentum) {
      mom[i] = mu * mom[i] + increment;
      v[i] -= mom[i];
    } else {
      v[i] -= increment;
    }
  }
}

void RmsPropLoop(float lr, float rho, float mu, float eps, std::span<float> var,
                 std::span<const float> grad, std::span<float> velocity,
                 std::span<float> momentum_slot, std::span<float> average_grad) {
  const std::size_t n = var.size();
  float* mom = momentum_slot.data();
  float* avg = average_grad.data();
  const bool momentum = !momentum_slot.empty(), centered = !average_grad.empty();
  if (momentum && centered) {
    RmsPropLoop<true, true>(lr, rho, mu, eps, n, var.data(), grad.data(), velocity.data(), mom,
                            avg);
  } else if (momentum) {
    RmsPropLoop<true, false>(lr, rho, mu, eps, n, var.data(), grad.data(), velocity.data(), mom,
                             avg);
  } else if (centered) {
    RmsPropLoop<false, true>(lr, rho, mu, eps, n, var.data(), grad.data(), velocity.data(), mom,
                             avg);
  } else {
    RmsPropLoop<false, false>(lr, rho, mu, eps, n, var.data(), grad.data(), velocity.data(), mom,
                              avg);
  }
}

void AdagradLoop(float lr, float offset, std::span<float> var, std::span<const float> grad,
                 std::span<float> accum) {
  float* __restrict v = var.data();
  const float* __restrict g = grad.data();
  float* __restrict a = accum.data();
  const std::size_t n = var.size();
  for (std::size_t i = 0; i < n; ++i) {
    a[i] += g[i] * g[i];
    v[i] -= lr * g[i] / std::sqrt(a[i] + offset);
  }
}

void DecayLoop(float rate, std::span<float> var) {
  float* __restrict v = var.data();
  const std::size_t n = var.size();
  for (std::size_t i = 0; i < n; ++i) v[i] -= rate * v[i];
}

// tf.clip_by_global_norm's factor for gradients whose squares sum to `sum_of_squares`:
// clip_norm / max(norm, clip_norm), NaN when the norm is not finite.
float ClipScale(float clip_norm, double sum_of_squares) {
  const double norm = std::sqrt(sum_of_squares);
  if (!std::isfinite(norm)) return std::numeric_limits<float>::quiet_NaN();
  return static_cast<float>(clip_norm / std::max(norm, static_cast<double>(clip_norm)));
}

// The element span of an optional slot (empty for none).
std::span<float> ValuesOrNone(Tensor* slot) {
  return slot != nullptr ? slot->values() : std::span<float>();
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
  absl::Status RmsProp(float lr, float rho, float momentum, float epsilon, Tensor& var,
                       const Tensor& grad, Tensor& velocity, Tensor* momentum_slot,
                       Tensor* average_grad) override {
    RmsPropLoop(lr, rho, momentum, epsilon, var.values(), grad.values(), velocity.values(),
                ValuesOrNone(momentum_slot), ValuesOrNone(average_grad));
    return absl::OkStatus();
  }
  absl::Status Adagrad(float lr, float offset, Tensor& var, const Tensor& grad,
                       Tensor& accum) override {
    AdagradLoop(lr, offset, var.values(), grad.values(), accum.values());
    return absl::OkStatus();
  }
  absl::Status Decay(float rate, Tensor& var) override {
    DecayLoop(rate, var.values());
    return absl::OkStatus();
  }
  absl::Status ClipByGlobalNorm(float clip_norm, std::span<Tensor* const> tensors) override {
    double sum = 0.0;
    for (const Tensor* tensor : tensors) {
      for (const float x : tensor->values()) sum += static_cast<double>(x) * x;
    }
    const float scale = ClipScale(clip_norm, sum);
    for (Tensor* tensor : tensors) {
      for (float& x : tensor->values()) x *= scale;
    }
    return absl::OkStatus();
  }
};

// Adam's learning rate with the bias correction of step + 1, in double as TF computes it.
float AdamRate(float lr, float beta1, float beta2, std::int64_t step) {
  const double t = static_cast<double>(step + 1);
  return static_cast<float>(lr * std::sqrt(1.0 - std::pow(static_cast<double>(beta2), t)) /
                            (1.0 - std::pow(static_cast<double>(beta1), t)));
}

class SgdOptimizer final : public Optimizer {
 public:
  explicit SgdOptimizer(const OptimizerConfig& config) : Optimizer(config) {}
  int slot_count() const override { return 0; }

 protected:
  absl::Status Update(DeviceUpdateRules& rules, Tensor& var, const Tensor& grad,
                      std::span<Tensor* const>, std::int64_t step) const override {
    return rules.Sgd(LearningRate(step), var, grad);
  }
};

// TF's MomentumOptimizer: accum = momentum * accum + grad; var -= lr * accum, or with Nesterov
// var -= lr * (grad + momentum * accum) using the updated accumulator.
class MomentumOptimizer final : public Optimizer {
 public:
  explicit MomentumOptimizer(const OptimizerConfig& config) : Optimizer(config) {}
  int slot_count() const override { return 1; }

 protected:
  absl::Status Update(DeviceUpdateRules& rules, Tensor& var, const Tensor& grad,
                      std::span<Tensor* const> slots, std::int64_t step) const override {
    return rules.Momentum(LearningRate(step), *config().momentum, config().use_nesterov, var, grad,
                          *slots[0]);
  }
};

// TF/Keras Adam (and AdamW, whose decay Optimizer::Run applies first): with t = step + 1,
// lr_t = lr * sqrt(1 - beta2^t) / (1 - beta1^t); m = b1 m + (1 - b1) g; v = b2 v + (1 - b2) g^2;
// var -= lr_t * m / (sqrt(v) + epsilon).
class AdamOptimizer final : public Optimizer {
 public:
  explicit AdamOptimizer(const OptimizerConfig& config) : Optimizer(config) {}
  int slot_count() const override { return 2; }

 protected:
  absl::Status Update(DeviceUpdateRules& rules, Tensor& var, const Tensor& grad,
                      std::span<Tensor* const> slots, std::int64_t step) const override {
    const OptimizerConfig& c = config();
    return rules.Adam(AdamRate(LearningRate(step), c.beta1, c.beta2, step), c.beta1, c.beta2,
                      c.epsilon, var, grad, *slots[0], *slots[1]);
  }
};

// Keras's RMSprop (device_rules.h has the formula): slots velocity, then the momentum when
// momentum > 0, then the mean gradient when centered.
class RmsPropOptimizer final : public Optimizer {
 public:
  explicit RmsPropOptimizer(const OptimizerConfig& config) : Optimizer(config) {}
  int slot_count() const override { return 1 + (has_momentum() ? 1 : 0) + (centered() ? 1 : 0); }

 protected:
  absl::Status Update(DeviceUpdateRules& rules, Tensor& var, const Tensor& grad,
                      std::span<Tensor* const> slots, std::int64_t step) const override {
    const OptimizerConfig& c = config();
    return rules.RmsProp(LearningRate(step), c.rho, *c.momentum, c.epsilon, var, grad, *slots[0],
                         has_momentum() ? slots[1] : nullptr, centered() ? slots.back() : nullptr);
  }

 private:
  bool has_momentum() const { return *config().momentum > 0.0f; }
  bool centered() const { return config().centered; }
};

// Keras's Adagrad; its one slot holds the accumulator less initial_accumulator_value.
class AdagradOptimizer final : public Optimizer {
 public:
  explicit AdagradOptimizer(const OptimizerConfig& config) : Optimizer(config) {}
  int slot_count() const override { return 1; }

 protected:
  absl::Status Update(DeviceUpdateRules& rules, Tensor& var, const Tensor& grad,
                      std::span<Tensor* const> slots, std::int64_t step) const override {
    const OptimizerConfig& c = config();
    return rules.Adagrad(LearningRate(step), c.initial_accumulator_value + c.epsilon, var, grad,
                         *slots[0]);
  }
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
  if (warmup_steps < 0) {
    return Invalid("learning_rate.warmup_steps",
                   "must be >= 0 (0: no warm-up), got " + std::to_string(warmup_steps));
  }
  TAAS_RETURN_IF_ERROR(need_rate("learning_rate.warmup_initial", warmup_initial));
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
    case Kind::kCosine:
      TAAS_RETURN_IF_ERROR(need_rate("learning_rate.initial", initial));
      TAAS_RETURN_IF_ERROR(need_positive_steps("cosine decay"));
      if (!(alpha >= 0.0f && alpha <= 1.0f)) {
        return Invalid("learning_rate.alpha",
                       "must be in [0, 1] (the final rate's fraction of the initial), got " +
                           std::to_string(alpha));
      }
      return absl::OkStatus();
  }
  return Invalid("learning_rate.kind",
                 "must be exponential, piecewise constant, polynomial, inverse time or cosine, "
                 "got " +
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

namespace {

// The rules for `device`, or FailedPrecondition saying that `what` is there without any.
absl::StatusOr<DeviceUpdateRules*> RulesFor(Device device, const std::string& what) {
  DeviceUpdateRules* rules = UpdateRulesFor(device.type);
  if (rules != nullptr) return rules;
  return absl::FailedPreconditionError(
      what + " is on " + DeviceName(device) +
      " but no update rules are registered for that device type: build with TAAS_WITH_CUDA and "
      "link the CUDA engine (taas::nn_cuda)");
}

}  // namespace

OptimizerConfig WithDefaults(OptimizerConfig config) {
  if (!config.momentum) config.momentum = config.name == "momentum" ? 0.9f : 0.0f;
  if (!config.weight_decay) config.weight_decay = config.name == "adamw" ? 0.004f : 0.0f;
  return config;
}

bool Optimizer::DecaysWeightsOf(std::string_view name) const {
  if (!(*config_.weight_decay > 0.0f)) return false;
  return std::none_of(
      config_.exclude_from_weight_decay.begin(), config_.exclude_from_weight_decay.end(),
      [&](const std::string& part) { return name.find(part) != std::string_view::npos; });
}

absl::Status Optimizer::Run(DeviceUpdateRules& rules, std::string_view name, Tensor& var,
                            const Tensor& grad, std::span<Tensor* const> slots,
                            std::int64_t step) const {
  if (DecaysWeightsOf(name)) {
    TAAS_RETURN_IF_ERROR(rules.Decay(LearningRate(step) * *config_.weight_decay, var));
  }
  return Update(rules, var, grad, slots, step);
}

void Optimizer::Apply(std::string_view name, std::span<float> var, std::span<const float> grad,
                      std::span<const std::span<float>> slots, std::int64_t step) const {
  const Shape shape = {static_cast<std::int64_t>(var.size())};
  Tensor var_view = Tensor::View(var.data(), shape, Device::Cpu());
  // A view is of mutable memory; the rules only read the gradient, which stays const below.
  const Tensor grad_view = Tensor::View(const_cast<float*>(grad.data()), shape, Device::Cpu());
  std::vector<Tensor> slot_views;
  slot_views.reserve(slots.size());
  std::array<Tensor*, kMaxSlots> slot_pointers{};
  for (std::size_t k = 0; k < slots.size() && k < slot_pointers.size(); ++k) {
    slot_pointers[k] =
        &slot_views.emplace_back(Tensor::View(slots[k].data(), shape, Device::Cpu()));
  }
  // The host's rules never fail.
  (void)Run(HostUpdateRules(), name, var_view, grad_view,
            std::span(slot_pointers.data(), slot_views.size()), step);
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
  TAAS_ASSIGN_OR_RETURN(DeviceUpdateRules * rules, RulesFor(device, name + ": the variable"));
  if (absl::Status status = Run(*rules, name, var, grad, slots, step); !status.ok()) {
    return absl::Status(status.code(),
                        name + ": " + DeviceName(device) + ": " + std::string(status.message()));
  }
  return absl::OkStatus();
}

absl::Status Optimizer::ClipByGlobalNorm(std::span<Tensor* const> gradients) const {
  if (!clips() || gradients.empty()) return absl::OkStatus();
  const Device device = gradients[0]->device();
  for (const Tensor* gradient : gradients) {
    if (gradient->device() != device) {
      return absl::InvalidArgumentError(
          "clipping by global norm: the gradients are on " + DeviceName(device) + " and " +
          DeviceName(gradient->device()) + ": the norm is taken over one device's gradients");
    }
  }
  TAAS_ASSIGN_OR_RETURN(DeviceUpdateRules * rules,
                        RulesFor(device, "clipping by global norm: the gradients"));
  if (absl::Status status = rules->ClipByGlobalNorm(config_.global_clipnorm, gradients);
      !status.ok()) {
    return absl::Status(status.code(), "clipping by global norm: " + DeviceName(device) + ": " +
                                           std::string(status.message()));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<Optimizer>> CreateOptimizer(const OptimizerConfig& given) {
  const OptimizerConfig config = WithDefaults(given);
  TAAS_RETURN_IF_ERROR(config.learning_rate.Validate());
  const auto need_fraction = [](const std::string& field, float value) {
    return value >= 0.0f && value < 1.0f
               ? absl::OkStatus()
               : Invalid(field, "must be in [0, 1), got " + std::to_string(value));
  };
  const auto need_rate = [](const std::string& field, float value, const std::string& zero) {
    return IsRate(value) ? absl::OkStatus()
                         : Invalid(field, "must be a finite number >= 0" + zero + ", got " +
                                              std::to_string(value));
  };
  const auto need_epsilon = [&] {
    return config.epsilon > 0.0f && std::isfinite(config.epsilon)
               ? absl::OkStatus()
               : Invalid("epsilon",
                         "must be a finite number > 0, got " + std::to_string(config.epsilon));
  };
  TAAS_RETURN_IF_ERROR(need_rate("weight_decay", *config.weight_decay, " (0: no decay)"));
  TAAS_RETURN_IF_ERROR(need_rate("global_clipnorm", config.global_clipnorm, " (0: no clipping)"));
  const auto& excluded = config.exclude_from_weight_decay;
  if (excluded.size() > kMaxExcludedNames) {
    return Invalid("exclude_from_weight_decay",
                   "may hold at most " + std::to_string(kMaxExcludedNames) + " names, got " +
                       std::to_string(excluded.size()));
  }
  for (std::size_t i = 0; i < excluded.size(); ++i) {
    const std::string field = "exclude_from_weight_decay[" + std::to_string(i) + "]";
    if (excluded[i].empty()) {
      return Invalid(field, "is empty, which every name contains: set weight_decay to 0 instead");
    }
    if (excluded[i].size() > kMaxExcludedNameBytes) {
      return Invalid(field, "must be at most " + std::to_string(kMaxExcludedNameBytes) +
                                " bytes, got " + std::to_string(excluded[i].size()));
    }
  }
  const std::string& name = config.name;
  if (name == "sgd") return std::unique_ptr<Optimizer>(new SgdOptimizer(config));
  if (name == "momentum" || name == "rmsprop") {
    TAAS_RETURN_IF_ERROR(need_rate("momentum", *config.momentum, ""));
  }
  if (name == "momentum") return std::unique_ptr<Optimizer>(new MomentumOptimizer(config));
  if (name == "adam" || name == "adamw") {
    TAAS_RETURN_IF_ERROR(need_fraction("beta1", config.beta1));
    TAAS_RETURN_IF_ERROR(need_fraction("beta2", config.beta2));
    TAAS_RETURN_IF_ERROR(need_epsilon());
    return std::unique_ptr<Optimizer>(new AdamOptimizer(config));
  }
  if (name == "rmsprop") {
    TAAS_RETURN_IF_ERROR(need_fraction("rho", config.rho));
    TAAS_RETURN_IF_ERROR(need_epsilon());
    return std::unique_ptr<Optimizer>(new RmsPropOptimizer(config));
  }
  if (name == "adagrad") {
    TAAS_RETURN_IF_ERROR(
        need_rate("initial_accumulator_value", config.initial_accumulator_value, ""));
    TAAS_RETURN_IF_ERROR(need_epsilon());
    return std::unique_ptr<Optimizer>(new AdagradOptimizer(config));
  }
  return Invalid("name",
                 "must be \"sgd\", \"momentum\", \"adam\", \"adamw\", \"rmsprop\" or "
                 "\"adagrad\", got \"" +
                     name + "\"");
}

}  // namespace taas::optim
