// What the layers share and a model never sees: buffer reuse, the ReLU mask, the shape errors of
// the layer contract (layer.h), the one place oneDNN's exceptions become a Status, and the way to
// another device's kernels (device_kernels.h).
#pragma once

#include <cstddef>
#include <initializer_list>
#include <list>
#include <memory>
#include <new>
#include <oneapi/dnnl/dnnl.hpp>
#include <string>
#include <utility>

#include "taas/base/status.h"
#include "taas/nn/device_kernels.h"
#include "taas/nn/layer.h"
#include "taas/tensor/initializers.h"
#include "taas/tensor/tensor.h"
#include "taas/tensor/variable.h"

namespace taas::nn::internal {

// Fills `variable.value` with `initializer`, seeded with the hash of the variable's name unless the
// initialiser fixes its own seed, so every replica and every run builds the same values. Bad
// parameters are a programming error (layer.h): std::invalid_argument
// "<layer>: <field>: <Initializer::Validate()'s message>", e.g.
// "dense1: kernel_initializer: stddev must be a finite number > 0, got -1".
void InitializeVariable(const std::string& layer, const char* field, const Initializer& initializer,
                        Variable& variable);

// Makes `tensor` have `shape` on `device`, reallocating only when either changes. On a device
// other than the host it throws std::bad_alloc when the device is full: call it inside OnDevice.
void Ensure(Tensor& tensor, const Shape& shape, Device device = Device::Cpu());

// A layer's plans (oneDNN primitives, their memories and workspaces, sized by the batch) per input
// shape, most recently used first, at most kMaxShapePlans (layer.h): a layer that has seen one
// large evaluation batch or many batch sizes does not keep a plan for each.
template <typename Plan>
using ShapePlans = std::list<std::pair<Shape, std::unique_ptr<Plan>>>;

// The plan for `shape`, now the most recently used; nullptr when there is none.
template <typename Plan>
Plan* FindPlan(ShapePlans<Plan>& plans, const Shape& shape) {
  for (auto it = plans.begin(); it != plans.end(); ++it) {
    if (it->first != shape) continue;
    plans.splice(plans.begin(), plans, it);
    return plans.front().second.get();
  }
  return nullptr;
}

// Keeps `plan` for `shape` as the most recently used, in place of any plan for that shape, and
// drops the least recently used beyond kMaxShapePlans. Returns it.
template <typename Plan>
Plan* KeepPlan(ShapePlans<Plan>& plans, const Shape& shape, std::unique_ptr<Plan> plan) {
  plans.remove_if([&shape](const auto& entry) { return entry.first == shape; });
  plans.emplace_front(shape, std::move(plan));
  while (plans.size() > kMaxShapePlans) plans.pop_back();
  return plans.front().second.get();
}

// grad * (output > 0) into `out`.
void ReluMask(const Tensor& output, const Tensor& grad, Tensor& out);

// InvalidArgument "<layer>: expected input <expected>, got <actual>"; `expected` is a pattern
// such as "[N, 784]".
absl::Status InputShapeError(const std::string& layer, const std::string& expected,
                             const Shape& actual);

// The checks every Backward starts with: FailedPrecondition unless the last Forward succeeded
// (`forward_ran`) or when `grad_output` is not on the device of `output`, InvalidArgument unless
// it has the shape of `output`.
absl::Status CheckGradient(const std::string& layer, bool forward_ran, const Tensor& grad_output,
                           const Tensor& output);

// Runs `body` (oneDNN calls; it returns a Status or a StatusOr) and returns its result, or
// Internal naming the layer when oneDNN throws (an unsupported shape, a primitive that cannot be
// created): oneDNN's exceptions end here. A try block costs nothing on the path that does not
// throw.
template <typename Body>
auto CallDnnl(const std::string& layer, Body&& body) -> decltype(body()) {
  try {
    return body();
  } catch (const dnnl::error& error) {
    return absl::InternalError(layer + ": oneDNN: " + error.what());
  }
}

// FailedPrecondition naming the layer and the variable unless every value and gradient of
// `variables` is on `device`, the input's: a layer never computes across devices.
absl::Status CheckVariablesOn(const std::string& layer, Device device,
                              std::initializer_list<const Variable*> variables);

// FailedPrecondition naming the layer and `device` when no engine registered kernels for it (a
// build without CUDA).
absl::Status NoKernels(const std::string& layer, Device device);

// "<layer>: <device>: <message>", same code: a device kernel's error as the layer returns it.
absl::Status NameLayer(const std::string& layer, Device device, const absl::Status& status);

// A layer's kernel and bias names: the options' when given, else "<layer>/kernel" and
// "<layer>/bias" (Keras's). One name for both is a programming error: std::invalid_argument
// "<layer>: kernel_name and bias_name are both \"...\"".
std::pair<std::string, std::string> KernelAndBiasNames(const std::string& layer,
                                                       const std::string& kernel_name,
                                                       const std::string& bias_name);

// std::invalid_argument "<layer>: kernel_regularizer: ..." unless the penalty is finite and >= 0
// (a programming error, as a bad initialiser is).
void CheckRegularizer(const std::string& layer, const Regularizer& regularizer);

// Adds the penalty's gradient, 2 * l2 * w, to `kernel`'s gradient (nothing without a penalty).
absl::Status AddPenaltyGradient(DeviceKernels& kernels, const Regularizer& regularizer,
                                Variable& kernel);

// Adds the penalty, l2 * sum(w^2), to total[0] on the kernel's device (nothing without one).
absl::Status AddPenaltyLoss(const std::string& layer, const Regularizer& regularizer,
                            const Variable& kernel, Tensor& total);

inline const absl::Status& StatusOf(const absl::Status& status) { return status; }
template <typename T>
const absl::Status& StatusOf(const absl::StatusOr<T>& result) {
  return result.status();
}

// Runs `body` with the kernels of `device` (the host's or the registered ones): kernel calls and
// Ensure on `device`, returning a Status or a StatusOr. Returns its result with the layer's name
// on an error, NoKernels when there are none, or ResourceExhausted naming the layer when the
// device's memory is full (the allocator's std::bad_alloc ends here).
template <typename Body>
auto OnDevice(const std::string& layer, Device device, Body&& body)
    -> decltype(body(std::declval<DeviceKernels&>())) {
  DeviceKernels* kernels = KernelsFor(device.type);
  if (kernels == nullptr) return NoKernels(layer, device);
  try {
    auto result = body(*kernels);
    if (!result.ok()) return NameLayer(layer, device, StatusOf(result));
    return result;
  } catch (const std::bad_alloc&) {
    return absl::ResourceExhaustedError(layer + ": " + DeviceName(device) + " is out of memory");
  }
}

}  // namespace taas::nn::internal
