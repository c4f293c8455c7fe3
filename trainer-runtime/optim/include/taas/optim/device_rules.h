// The update rules of a device: the seam through which Optimizer::ApplyTensors updates a variable
// wherever it lives. The host's rules are Optimizer::Apply's loops (HostUpdateRules); an engine for
// another device (the CUDA engine, taas_nn_cuda) implements DeviceUpdateRules and registers it for
// its DeviceType, as it registers the device's memory (taas/tensor/device.h). optim itself holds
// no device code; the learning rate (and Adam's bias correction) is computed on the host by the
// optimizer and passed in, so every schedule works on every device.
//
// Contract of every rule: the tensors are on one device of the rules' type, share one shape and
// do not overlap (Optimizer::ApplyTensors checked that); the update is element-wise, in float, with
// the host's formulas (optimizer.cc), and may return before the device ran it (queued in order).
// Returns OK or Internal naming the failing call; never throws.
#pragma once

#include <span>

#include "taas/base/status.h"
#include "taas/tensor/device.h"
#include "taas/tensor/tensor.h"

namespace taas::optim {

class DeviceUpdateRules {
 public:
  virtual ~DeviceUpdateRules() = default;
  // var -= lr * grad.
  virtual absl::Status Sgd(float lr, Tensor& var, const Tensor& grad) = 0;
  // accum = momentum * accum + grad; var -= lr * accum, or with `nesterov`
  // var -= lr * (grad + momentum * accum).
  virtual absl::Status Momentum(float lr, float momentum, bool nesterov, Tensor& var,
                                const Tensor& grad, Tensor& accum) = 0;
  // m = beta1 m + (1 - beta1) grad; v = beta2 v + (1 - beta2) grad^2;
  // var -= lr_t * m / (sqrt(v) + epsilon), lr_t already bias-corrected.
  virtual absl::Status Adam(float lr_t, float beta1, float beta2, float epsilon, Tensor& var,
                            const Tensor& grad, Tensor& m, Tensor& v) = 0;
  // Keras's RMSprop: velocity = rho velocity + (1 - rho) grad^2; with `average_grad` (centered)
  // average_grad = rho average_grad + (1 - rho) grad and d = velocity - average_grad^2 + epsilon,
  // else d = velocity + epsilon; increment = lr * grad / sqrt(d); with `momentum_slot`
  // momentum_slot = momentum * momentum_slot + increment and var -= momentum_slot, else
  // var -= increment. `momentum_slot` and `average_grad` may be null (not kept).
  virtual absl::Status RmsProp(float lr, float rho, float momentum, float epsilon, Tensor& var,
                               const Tensor& grad, Tensor& velocity, Tensor* momentum_slot,
                               Tensor* average_grad) = 0;
  // Keras's Adagrad with the accumulator kept less its initial value (so that it starts at zero
  // as every slot does): accum += grad^2; var -= lr * grad / sqrt(accum + offset), offset =
  // initial_accumulator_value + epsilon.
  virtual absl::Status Adagrad(float lr, float offset, Tensor& var, const Tensor& grad,
                               Tensor& accum) = 0;
  // Decoupled weight decay: var -= rate * var (rate = lr * weight_decay).
  virtual absl::Status Decay(float rate, Tensor& var) = 0;
  // tf.clip_by_global_norm in place: norm = sqrt of the sum of every element's square over all of
  // `tensors` (summed in double), then each tensor *= clip_norm / max(norm, clip_norm), or NaN
  // when the norm is not finite (TF's rule: a step that overflowed shows as NaN, not as a quietly
  // zeroed gradient). Computed and applied on the device: nothing is copied to the host. The sum
  // is taken in a fixed order, so every replica holding the same gradients scales them alike.
  virtual absl::Status ClipByGlobalNorm(float clip_norm, std::span<Tensor* const> tensors) = 0;
};

// The host's rules, on host tensors: Optimizer::Apply's loops. A test device (taas::sim_device)
// runs them on its own memory, so its updates are the host's bit for bit.
DeviceUpdateRules& HostUpdateRules();

// The rules for `type`: HostUpdateRules for kCpu, the registered ones for another type, nullptr
// for a type without any.
DeviceUpdateRules* UpdateRulesFor(DeviceType type);

// Makes `rules` (not owned; it must outlive every update on the type's devices) update variables
// on devices of `type` (not kCpu: refused, returns nullptr); returns the one it replaces.
DeviceUpdateRules* RegisterDeviceUpdateRules(DeviceType type, DeviceUpdateRules* rules);

}  // namespace taas::optim
