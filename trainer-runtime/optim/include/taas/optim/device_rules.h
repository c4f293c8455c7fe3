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
