// Private to the runtime: a model replica's variables on its device (issue 17).
//
// The model's Variables move to the replica's device once build_model returns, where its layers
// read the values and write the gradients. The runtime's core (parameter-server pulls and
// pushes, the chief's initialisation, restore, checkpoints and summaries, all-reduce over host
// floats, the evaluator's restore) works on host tensors: it gets host mirrors of the same
// variables in their place, and the two meet at fixed points — values to the device before the
// model runs (train(), evaluate(), after_train()), gradients to the host after train(). It
// reaches the device only through taas/tensor/device.h (the registered DeviceMemory), so the
// core stays free of CUDA.
#pragma once

#include <memory>
#include <vector>

#include "taas/base/status.h"
#include "taas/tensor/device.h"
#include "taas/tensor/variable.h"

namespace taas::runtime {

class VariablePlacement {
 public:
  // Moves each of `variables`' value and gradient to `device` (not the host) and replaces the
  // pointers in `variables` by host mirrors of them (same names, values and shapes), which live as
  // long as the placement. An error (kResourceExhausted when the device is full) is permanent.
  static absl::StatusOr<std::unique_ptr<VariablePlacement>> Place(std::vector<Variable*>& variables,
                                                                  Device device);

  // The mirrors' values into the model's variables on the device.
  absl::Status ValuesToDevice();
  // The model's gradients from the device into the mirrors; an error when a layer left a
  // gradient of another size than its value.
  absl::Status GradientsToHost();

  Device device() const { return device_; }
  // The model's variables on the device, in registration order: what an all-reduce on the device
  // (NCCL) and an update rule on the device would use instead of the host mirrors' round trip.
  const std::vector<Variable*>& device_variables() const { return model_; }

 private:
  explicit VariablePlacement(Device device) : device_(device) {}

  Device device_;
  std::vector<Variable*> model_;                 // the model's, on device_
  std::vector<std::unique_ptr<Variable>> host_;  // their mirrors, in the same order
};

}  // namespace taas::runtime

namespace taas::runtime {

// The same, as no-ops for a replica on the host (no placement).
inline absl::Status ValuesToDevice(VariablePlacement* placement) {
  return placement != nullptr ? placement->ValuesToDevice() : absl::OkStatus();
}
inline absl::Status GradientsToHost(VariablePlacement* placement) {
  return placement != nullptr ? placement->GradientsToHost() : absl::OkStatus();
}

}  // namespace taas::runtime
