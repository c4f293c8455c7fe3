// Private to the runtime: a model replica's variables as the runtime keeps them.
//
// Once build_model returns, the model's variables become views (Tensor::Slice) of fused buffers
// on the replica's device: one for the values, one for the gradients (which also holds the
// replica's loss, reduced with them), and, under all-reduce, one per optimizer slot (the trainer's,
// with the same layout). Each variable's part is 64-byte aligned, and the parts are laid out in
// reverse registration order, the order in which a backward pass finishes them, so that the
// all-reduce's buckets, contiguous ranges of the gradient buffer, become complete front to back
// and none needs gathering. The model computes into its variables as before; it must write into
// them, never assign new tensors to them (CheckViews says which one did).
//
// The runtime's core (parameter-server pulls and pushes, the chief's initialisation and the init
// fn, restore, checkpoints, summaries) works on host tensors: for a replica on the host these are
// the model's own variables; for one on a device, host mirrors (same names and shapes, views of
// host buffers of the same layout), which the state variables of BuiltModel point at. The two
// sides meet only through explicit copies, one fused copy per buffer, made when a side that the
// other changed is about to be read (ValuesToDevice, ValuesToHost, GradientsToHost). Everything
// reaches the device through taas/tensor (the registered DeviceMemory), so the core stays free of
// any device's code.
//
// State that is not trained (ModelBuilder::AddState) is never fused: its values stay the model's
// own tensors (a LibTorch module's buffers are its own), which the runtime never replaces. For a
// replica on a device the core sees host mirrors of them too, met through one copy per state
// variable only where the core reads or writes state (StateToHost: a checkpoint, evaluate(),
// after_train(); StateToDevice: after a restore, the init fn or the start broadcast or pull), never
// on a step: train() changes the device's side (StateChangedOnDevice) without any copy.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "taas/base/status.h"
#include "taas/tensor/device.h"
#include "taas/tensor/variable.h"

namespace taas::runtime {

class ReplicaState {
 public:
  // Where a variable's part lies in the fused buffers.
  struct Part {
    std::int64_t offset = 0;  // first element
    std::int64_t size = 0;    // the variable's elements
    std::int64_t padded = 0;  // size rounded up to the alignment: the part's span in the buffer
  };

  // Fuses `variables` (as build_model registered them) on `device`: allocates the buffers, copies
  // the initial values in, makes the model's variables views of them, and, for a device that is
  // not the host, replaces the pointers in `variables` by host mirrors holding the same values,
  // and those in `states` (already on `device`) by host mirrors of them. The mirrors live as long
  // as the state. An error (kResourceExhausted when the device is full) is permanent.
  static absl::StatusOr<std::unique_ptr<ReplicaState>> Create(std::vector<Variable*>& variables,
                                                              std::vector<Variable*>& states,
                                                              Device device);

  Device device() const { return device_; }
  // The model's variables (on the device), in registration order.
  const std::vector<Variable*>& model_variables() const { return model_; }
  // Each variable's part, in registration order.
  const std::vector<Part>& parts() const { return parts_; }
  // The parts' span, in elements: the length of the value buffer and of each slot buffer.
  std::int64_t elements() const { return elements_; }
  // The gradient buffer: every part, then the loss at element loss_offset().
  Tensor& gradients() { return gradients_; }
  std::int64_t loss_offset() const { return elements_; }
  // The gradient buffer's parts without the loss (a view): all of a step's gradients, which
  // clipping by global norm scales together (the padding between parts is zero and stays so).
  Tensor variable_gradients() { return gradients_.Slice(0, {elements_}); }
  Tensor& values() { return values_; }

  // The host side wrote the values (a pull, a restore, the init fn): ValuesToDevice copies.
  void ValuesChangedOnHost() { device_current_ = false; }
  // A step changed the values on the device: ValuesToHost copies.
  void ValuesChangedOnDevice() { host_current_ = false; }
  // Brings the device's values up to date with the host's (one copy; none when current or on the
  // host).
  absl::Status ValuesToDevice();
  // Brings the host mirrors up to date with the device's values (one copy; none when current or
  // on the host).
  absl::Status ValuesToHost();
  // The model's state (on the device), in registration order.
  const std::vector<Variable*>& model_states() const { return model_states_; }
  // The host side wrote the state (a restore, the init fn, a start broadcast or pull).
  void StateChangedOnHost() { state_device_current_ = false; }
  // train() may have changed the state on the device (every step: no copy until it is read).
  void StateChangedOnDevice() { state_host_current_ = false; }
  // The host mirrors' state onto the device (one copy per state variable; none when current or
  // on the host), and the other way.
  absl::Status StateToDevice();
  absl::Status StateToHost();

  // All of the above: before the model's code other than train() runs (the init fn, evaluate,
  // after_train), which may read its own variables and state or the host ones.
  absl::Status Synchronize() {
    TAAS_RETURN_IF_ERROR(ValuesToHost());
    TAAS_RETURN_IF_ERROR(ValuesToDevice());
    TAAS_RETURN_IF_ERROR(StateToHost());
    return StateToDevice();
  }
  // The device's gradients into the mirrors (one copy; none on the host).
  absl::Status GradientsToHost();

  // InvalidArgument naming the first variable whose value or gradient is no longer the view the
  // runtime made (the model assigned a tensor to it instead of writing into it).
  absl::Status CheckViews() const;

  // The fused buffers' alignment, in elements (64 bytes).
  static constexpr std::int64_t kAlignment = 16;

 private:
  explicit ReplicaState(Device device) : device_(device) {}
  absl::Status Fuse(std::vector<Variable*>& variables);
  absl::Status MirrorStates(std::vector<Variable*>& states);

  Device device_;
  std::vector<Variable*> model_;
  std::vector<Part> parts_;
  std::int64_t elements_ = 0;
  Tensor values_, gradients_;
  // A replica on a device: the host buffers and the mirrors (views of them) the core sees.
  Tensor host_values_, host_gradients_;
  std::vector<std::unique_ptr<Variable>> mirrors_;
  bool host_current_ = true;
  bool device_current_ = true;
  // The state: the model's, and for a device the host mirrors (one host tensor each).
  std::vector<Variable*> model_states_;
  std::vector<std::unique_ptr<Variable>> state_mirrors_;
  bool state_host_current_ = true;
  bool state_device_current_ = true;
};

}  // namespace taas::runtime
