// The base of every layer and the contract all layers share. Layers run where their input is: on
// the host on the CPU engine (oneDNN, host_kernels.h), on another device on its registered kernels
// (device_kernels.h); images in NHWC.
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
// - oneDNN's own errors (dnnl::error) and a device kernel's stop at the layer: Internal, naming it.
// - On a device, nothing a layer does waits for the device or copies to the host.
// - The error-free path costs a shape comparison per call and allocates nothing.
// - Returned pointers stay valid until the next call on the layer.
// - Primitives and buffers are created once per input shape and reused, for the last
//   kMaxShapePlans input shapes only: a layer's memory follows the batches it runs now (a training
//   batch and its remainder, an evaluation batch and its last, smaller one), not every shape it
//   ever saw. A shape seen again after being dropped is planned again (a few milliseconds).
// - Options that break a layer's invariants (a dropout rate of 1, a chunk of 0) are programming
//   errors, not data: the constructor throws std::invalid_argument, as the core's Tensor does for
//   a negative shape.
// Layers are not thread-safe; one model is driven by one thread.
#pragma once

#include <cstddef>
#include <string>
#include <utility>
#include <vector>

#include "taas/base/status.h"
#include "taas/tensor/tensor.h"
#include "taas/tensor/variable.h"

namespace taas::nn {

// Input shapes a layer keeps primitives and buffers for (the layer contract above).
inline constexpr std::size_t kMaxShapePlans = 4;

// The activation a layer fuses into its output (Keras's `activation` argument).
enum class Activation { kNone, kRelu };

// A penalty on a layer's kernel (Keras's `kernel_regularizer`): `l2` * sum(w^2) added to the loss
// through Layer::AddRegularizationLoss, and its gradient 2 * l2 * w added to the kernel's gradient
// by the layer's own Backward, so the gradient is final when Backward returns (the all-reduce
// trainer sends it then). TensorFlow 1's l2_regularizer(scale), scale * sum(w^2) / 2, is
// L2(scale / 2).
struct Regularizer {
  float l2 = 0.0f;  // finite and >= 0; 0: none
};
namespace regularizers {
inline Regularizer L2(float l2) { return Regularizer{l2}; }
}  // namespace regularizers

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
  // Adds the layer's regularization losses (its Regularizer's) to total[0], a tensor on the
  // device of the layer's variables, without waiting for the device. Nothing for a layer without
  // a regularizer.
  virtual absl::Status AddRegularizationLoss(Tensor& /*total*/) { return absl::OkStatus(); }

  const std::string& name() const { return name_; }

 protected:
  bool input_gradient_ = true;

 private:
  std::string name_;
};

}  // namespace taas::nn
