// A trainable parameter as the model, the parameter servers and checkpoints see it.
#pragma once

#include <string>

#include "taas/tensor/tensor.h"

namespace taas {

struct Variable;

// Told when a variable's gradient for the running step is final: the engine's backward pass has
// written it for the last time (on a device: enqueued the last kernel that writes it). The
// all-reduce trainer listens so that it sends a bucket of gradients while backward goes on. Called
// on the thread running train().
class GradientListener {
 public:
  virtual ~GradientListener() = default;
  virtual void GradientReady(const Variable& variable) = 0;
};

// Layers own their Variables; the trainer runtime reads `value` and `gradient` through pointers the
// model registers, so a Variable must not move once registered. `name` is unique within a model
// ("dense1/kernel") and is the key under which parameter servers and checkpoints store it. The
// runtime may make `value` and `gradient` views of its own buffers (Tensor::Slice): a model writes
// into them and never assigns new tensors to them.
struct Variable {
  std::string name;
  Tensor value;
  Tensor gradient;  // Same shape as value; written by the layer's backward pass.
  // Set by the runtime while it trains; null otherwise. An engine tells it through
  // MarkGradientReady.
  GradientListener* listener = nullptr;
  // False freezes it (TF's trainable=False, PyTorch's requires_grad(false)): registered with
  // ModelBuilder::AddVariable it becomes the model's state, as the torch engine's frozen
  // parameters do: kept, checkpointed, restored and warm-started under its name, but never
  // pushed, pulled for gradients or all-reduced, and given no optimizer slots. Set it before
  // build_model registers the variable; a gradient the engine still writes is never read.
  bool trainable = true;
};

// What an engine calls once a variable's gradient is final for the step (nn::Sequential after each
// layer's Backward). A model that writes a gradient itself needs not call it: the runtime takes
// every gradient once train() returns.
inline void MarkGradientReady(const Variable& variable) {
  if (variable.listener != nullptr) variable.listener->GradientReady(variable);
}

}  // namespace taas
