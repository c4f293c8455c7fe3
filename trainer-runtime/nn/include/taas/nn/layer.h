// The base of every layer and the contract all layers share. Layers run on oneDNN primitives,
// images in NHWC.
//
// NHWC (channels last) is TensorFlow's layout, so kernels ([kh, kw, in, out], TF's HWIO) and the
// Flatten order match Keras, and oneDNN 2.6's AVX-512 convolutions run on NHWC activations
// directly; only the small kernels are reordered to oneDNN's preferred blocked layout.
//
// Contract shared by all layers:
// - Forward(input) returns the output, or InvalidArgument naming the layer, the shape it expects
//   and the shape it got when `input` does not fit the layer (a batch whose shape is not the
//   model's is a data error, returned as a value: nothing in nn throws for input data). On success
//   the layer keeps a pointer to `input`, which must stay unchanged until Backward returns.
// - Backward(grad_output) overwrites the gradients of the layer's variables and returns
//   dL/d(input) (an empty tensor when the layer was built with `input_gradient = false`);
//   InvalidArgument when `grad_output` does not have the last output's shape, FailedPrecondition
//   unless the last Forward succeeded.
// - oneDNN's own errors (dnnl::error) stop at the layer: Internal, naming it.
// - The error-free path costs a shape comparison per call and allocates nothing.
// - Returned pointers stay valid until the next call on the layer.
// - Primitives and buffers are created once per input shape and reused.
// - Options that break a layer's invariants (a dropout rate of 1, a chunk of 0) are programming
//   errors, not data: the constructor throws std::invalid_argument, as the core's Tensor does for
//   a negative shape.
// Layers are not thread-safe; one model is driven by one thread.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "taas/base/status.h"
#include "taas/tensor/tensor.h"
#include "taas/tensor/variable.h"

namespace taas::nn {

// The activation a layer fuses into its output (Keras's `activation` argument).
enum class Activation { kNone, kRelu };

class Layer {
 public:
  explicit Layer(std::string name) : name_(std::move(name)) {}
  virtual ~Layer() = default;
  Layer(const Layer&) = delete;
  Layer& operator=(const Layer&) = delete;

  virtual absl::StatusOr<const Tensor*> Forward(const Tensor& input, bool training) = 0;
  virtual absl::StatusOr<const Tensor*> Backward(const Tensor& grad_output) = 0;
  // The layer's trainable variables, kernel before bias.
  virtual std::vector<Variable*> variables() { return {}; }
  // Whether Backward must compute dL/d(input); the first layer of a model does not need it.
  void set_input_gradient(bool enabled) { input_gradient_ = enabled; }
  // For a layer with a fused ReLU: from now on Backward receives gradients that are already zero
  // wherever the output is zero, so it skips its own mask pass. Returns false (and changes
  // nothing) for layers without a fused ReLU.
  virtual bool SkipReluMask() { return false; }

  const std::string& name() const { return name_; }

 protected:
  bool input_gradient_ = true;

 private:
  std::string name_;
};

}  // namespace taas::nn
