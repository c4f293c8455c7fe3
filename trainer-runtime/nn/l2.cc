#include "taas/nn/l2.h"

#include "layer_internal.h"

namespace taas::nn {

absl::StatusOr<float> L2Loss(const std::vector<Variable*>& variables, float scale) {
  if (variables.empty()) return 0.0f;
  const Device device = variables.front()->value.device();
  Tensor total;
  for (const Variable* variable : variables) {
    const Tensor& w = variable->value;
    if (w.device() != device) {
      return absl::FailedPreconditionError(
          variable->name + " is on " + DeviceName(w.device()) + ", " + variables.front()->name +
          " on " + DeviceName(device) + ": L2Loss takes variables of one device");
    }
    TAAS_RETURN_IF_ERROR(internal::OnDevice(variable->name, device, [&](DeviceKernels& k) {
      internal::Ensure(total, {1}, device);
      return k.AddSumOfSquares(w, 0.5f * scale, total);
    }));
  }
  Tensor host({1});
  TAAS_RETURN_IF_ERROR(CopyInto(total, host));
  return host.data()[0];
}

absl::Status AddL2Gradients(const std::vector<Variable*>& variables, float scale) {
  for (Variable* variable : variables) {
    const Device device = variable->value.device();
    TAAS_RETURN_IF_ERROR(internal::CheckVariablesOn(variable->name, device, {variable}));
    TAAS_RETURN_IF_ERROR(internal::OnDevice(variable->name, device, [&](DeviceKernels& kernels) {
      return kernels.Axpy(scale, variable->value, variable->gradient);
    }));
  }
  return absl::OkStatus();
}

}  // namespace taas::nn
