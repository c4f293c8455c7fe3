#include "taas/nn/l2.h"

#include "layer_internal.h"

namespace taas::nn {

absl::StatusOr<float> L2Loss(const std::vector<Variable*>& variables, float scale) {
  double sum = 0.0;
  for (const Variable* variable : variables) {
    const Tensor& w = variable->value;
    if (!w.device().is_cpu()) {
      TAAS_ASSIGN_OR_RETURN(
          const double squares,
          internal::OnDevice(variable->name, w.device(),
                             [&](DeviceKernels& kernels) -> absl::StatusOr<double> {
                               return kernels.SumOfSquares(w);
                             }));
      sum += squares;
      continue;
    }
    for (float x : w.values()) sum += static_cast<double>(x) * x;
  }
  return static_cast<float>(0.5 * scale * sum);
}

absl::Status AddL2Gradients(const std::vector<Variable*>& variables, float scale) {
  for (Variable* variable : variables) {
    const Device device = variable->value.device();
    TAAS_RETURN_IF_ERROR(internal::CheckVariablesOn(variable->name, device, {variable}));
    if (!device.is_cpu()) {
      TAAS_RETURN_IF_ERROR(internal::OnDevice(variable->name, device, [&](DeviceKernels& kernels) {
        return kernels.Axpy(scale, variable->value, variable->gradient);
      }));
      continue;
    }
    const float* w = variable->value.data();
    float* g = variable->gradient.data();
    for (std::int64_t i = 0; i < variable->value.size(); ++i) g[i] += scale * w[i];
  }
  return absl::OkStatus();
}

}  // namespace taas::nn
