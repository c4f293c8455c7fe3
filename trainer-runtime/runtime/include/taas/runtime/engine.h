// What a model engine that keeps tensors of its own (LibTorch's modules: taas/torch/module.h)
// and the runtime tell each other. The built-in engine (taas/nn) needs none of this: its layers
// compute into the Variables the runtime hands them. An engine whose parameters are its own
// tensors must point them at the runtime's buffers once they exist, and an engine whose backward
// pass adds into gradients (autograd) must have them zeroed before each step.
#pragma once

#include <exception>
#include <string>

#include "taas/base/status.h"

namespace taas {

// Registered by build_model through ModelBuilder::SetEngine; the runtime keeps the pointer (it
// must stay valid until RunMain returns) and calls it on the thread that runs train(). An error
// from any call is the model's (permanent, kExitModelError), with the engine's message.
class EngineHooks {
 public:
  virtual ~EngineHooks() = default;

  // Once, after build_model returned: the registered variables' `value` and `gradient` are now
  // views of the runtime's buffers on the replica's device (replica_state.h). The engine points
  // its own tensors at them, so that no step copies a parameter or a gradient.
  virtual absl::Status VariablesPlaced() = 0;
  // Before every train() call, after the step's values arrived: e.g. zero the gradients that the
  // engine's backward pass adds into.
  virtual absl::Status BeforeStep() = 0;
  // After every train() call that succeeded, before the runtime reads the gradients: an error
  // when the model broke what VariablesPlaced set up (a parameter replaced, its gradient dropped
  // by zero_grad), naming the parameter and the fix.
  virtual absl::Status AfterStep() = 0;
  // What the error line says of an exception train() threw (the model's failure): the engine's
  // own message without what only its developers need (LibTorch's C++ backtrace).
  virtual std::string ExceptionMessage(const std::exception& e) const { return e.what(); }
};

}  // namespace taas
