// Layers with forward and backward passes on oneDNN primitives, images in NHWC.
//
// NHWC (channels last) is TensorFlow's layout, so kernels ([kh, kw, in, out], TF's HWIO) and the
// Flatten order match Keras, and oneDNN 2.6's AVX-512 convolutions run on NHWC activations
// directly; only the small kernels are reordered to oneDNN's preferred blocked layout.
//
// Contract shared by all layers:
// - Forward(input) keeps a pointer to `input`, which must stay unchanged until Backward returns.
// - Backward(grad_output) overwrites the gradients of the layer's variables and returns
//   dL/d(input) (an empty tensor when the layer was built with `input_gradient = false`).
// - Returned references stay valid until the next call on the layer.
// - Primitives and buffers are created once per input shape and reused.
// - Shape mismatches are programming errors and throw std::invalid_argument.
// Layers are not thread-safe; one model is driven by one thread.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <random>
#include <span>
#include <string>
#include <vector>

#include "taas/base/status.h"
#include "taas/nn/compute.h"
#include "taas/tensor/tensor.h"
#include "taas/tensor/variable.h"

namespace taas::nn {

enum class Activation { kNone, kRelu };
enum class Padding { kValid, kSame };

class Layer {
 public:
  explicit Layer(std::string name) : name_(std::move(name)) {}
  virtual ~Layer() = default;
  Layer(const Layer&) = delete;
  Layer& operator=(const Layer&) = delete;

  virtual const Tensor& Forward(const Tensor& input, bool training) = 0;
  virtual const Tensor& Backward(const Tensor& grad_output) = 0;
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

// y = activation(x W + b), x [N, in], W [in, out] ("<name>/kernel"), b [out] ("<name>/bias").
// Matrix products run on oneDNN's sgemm.
class Dense final : public Layer {
 public:
  Dense(std::string name, std::int64_t in, std::int64_t out, Activation activation);
  const Tensor& Forward(const Tensor& input, bool training) override;
  const Tensor& Backward(const Tensor& grad_output) override;
  std::vector<Variable*> variables() override { return {&kernel_, &bias_}; }
  bool SkipReluMask() override;
  Variable& kernel() { return kernel_; }
  Variable& bias() { return bias_; }

 private:
  std::int64_t in_, out_;
  Activation activation_;
  bool skip_relu_mask_ = false;
  Variable kernel_, bias_;
  const Tensor* input_ = nullptr;
  Tensor output_, masked_grad_, input_grad_;
};

// 2-D convolution, input [N, H, W, C], kernel [kh, kw, C, filters], bias [filters].
class Conv2D final : public Layer {
 public:
  Conv2D(std::string name, ComputeContext& context, std::int64_t in_channels, std::int64_t filters,
         std::int64_t kernel_size, std::int64_t stride, Padding padding, Activation activation);
  ~Conv2D() override;
  const Tensor& Forward(const Tensor& input, bool training) override;
  const Tensor& Backward(const Tensor& grad_output) override;
  std::vector<Variable*> variables() override { return {&kernel_, &bias_}; }
  bool SkipReluMask() override;
  Variable& kernel() { return kernel_; }
  Variable& bias() { return bias_; }
  // Prepares Backward for `input` as if Forward(input) had run, without computing: the returned
  // output has the right shape but stale contents. For callers that restore state
  // (ChunkedConvPool).
  const Tensor& Rebind(const Tensor& input);
  // The oneDNN implementations chosen for the last input shape ("fwd: ..., bwd_d: ...").
  std::string ImplementationInfo() const;

 private:
  struct Plan;
  Plan& PlanFor(const Shape& input_shape);

  ComputeContext& context_;
  std::int64_t in_channels_, filters_, kernel_size_, stride_;
  Padding padding_;
  Activation activation_;
  bool skip_relu_mask_ = false;
  Variable kernel_, bias_;
  std::map<Shape, std::unique_ptr<Plan>> plans_;
  Plan* plan_ = nullptr;
  const Tensor* input_ = nullptr;
  Tensor output_, masked_grad_, input_grad_;
};

// Max pooling over pool x pool windows with stride `stride`, no padding (Keras "valid").
class MaxPool2D final : public Layer {
 public:
  MaxPool2D(std::string name, ComputeContext& context, std::int64_t pool, std::int64_t stride);
  ~MaxPool2D() override;
  std::string ImplementationInfo() const;
  // The input is a ReLU's output whose layer skips its own mask (SkipReluMask): Backward then
  // zeroes the gradient of windows whose maximum is 0, which is exactly the ReLU's mask at the
  // positions the gradient flows to, on a tensor pool^2 times smaller.
  void set_relu_input(bool enabled) { relu_input_ = enabled; }
  // The argmax workspace of the last Forward, which Backward reads: a caller that interleaves
  // several batches saves and restores it (ChunkedConvPool).
  std::span<std::uint8_t> Workspace();
  // As Conv2D::Rebind; the workspace must be restored separately.
  const Tensor& Rebind(const Tensor& input);
  const Tensor& Forward(const Tensor& input, bool training) override;
  const Tensor& Backward(const Tensor& grad_output) override;

 private:
  struct Plan;
  Plan& PlanFor(const Shape& input_shape);

  ComputeContext& context_;
  std::int64_t pool_, stride_;
  bool relu_input_ = false;
  std::map<Shape, std::unique_ptr<Plan>> plans_;
  Plan* plan_ = nullptr;
  const Tensor* input_ = nullptr;
  Tensor output_, masked_grad_, input_grad_;
};

class ReLU final : public Layer {
 public:
  explicit ReLU(std::string name) : Layer(std::move(name)) {}
  const Tensor& Forward(const Tensor& input, bool training) override;
  const Tensor& Backward(const Tensor& grad_output) override;

 private:
  Tensor output_, input_grad_;
};

// Inverted dropout: in training, zeroes each element with probability `rate` and scales the rest
// by 1 / (1 - rate); the identity in evaluation.
class Dropout final : public Layer {
 public:
  Dropout(std::string name, float rate, std::uint64_t seed);
  const Tensor& Forward(const Tensor& input, bool training) override;
  const Tensor& Backward(const Tensor& grad_output) override;

 private:
  float rate_;
  std::mt19937_64 rng_;
  bool applied_ = false;
  Tensor mask_, output_, input_grad_;
};

// Conv2D (with ReLU) followed by MaxPool2D, run `chunk` examples at a time so the convolution's
// output, the largest tensor of a small CNN, stays in cache instead of making a round trip to
// memory. The convolution output is not kept: Backward recomputes each chunk's forward pass
// The convolution output is not kept (the ReLU mask is applied on the pooled gradient); each
// chunk's pooling workspace is. Same results as the two layers in sequence; variables are the
// convolution's ("<conv name>/kernel", ...).
class ChunkedConvPool final : public Layer {
 public:
  ChunkedConvPool(std::unique_ptr<Conv2D> conv, std::unique_ptr<MaxPool2D> pool,
                  std::int64_t chunk);
  const Tensor& Forward(const Tensor& input, bool training) override;
  const Tensor& Backward(const Tensor& grad_output) override;
  std::vector<Variable*> variables() override { return conv_->variables(); }
  Conv2D& conv() { return *conv_; }

 private:
  // Copies examples [begin, begin + count) of `from` into `to` (shaped [count, ...]).
  static void CopyChunk(const Tensor& from, std::int64_t begin, std::int64_t count, Tensor& to);

  std::unique_ptr<Conv2D> conv_;
  std::unique_ptr<MaxPool2D> pool_;
  std::int64_t chunk_;
  const Tensor* input_ = nullptr;
  Tensor chunk_input_, chunk_grad_, masked_grad_, output_, input_grad_, kernel_grad_, bias_grad_;
  std::vector<std::vector<std::uint8_t>> workspaces_;  // per chunk
};

// [N, d1, d2, ...] -> [N, d1 * d2 * ...] (row-major, so NHWC flattens like Keras).
class Flatten final : public Layer {
 public:
  explicit Flatten(std::string name) : Layer(std::move(name)) {}
  const Tensor& Forward(const Tensor& input, bool training) override;
  const Tensor& Backward(const Tensor& grad_output) override;

 private:
  Shape input_shape_;
  Tensor output_, input_grad_;
};

// Mean softmax cross-entropy over a batch of logits [N, classes] with integer labels.
class SoftmaxCrossEntropy {
 public:
  struct Result {
    float loss = 0.0f;         // mean over the batch
    std::int64_t correct = 0;  // argmax(logits) == label
  };
  // InvalidArgument naming the row for a label outside [0, classes) or a label count that is not
  // the batch's (the batch's data is wrong: an error value, not a throw); nothing is computed then.
  absl::StatusOr<Result> Forward(const Tensor& logits, std::span<const std::int32_t> labels);
  // dL/d(logits) of the last Forward: (softmax - onehot) / N.
  const Tensor& Backward() const { return grad_; }

 private:
  Tensor grad_;
};

// TF's l2_regularizer(scale): scale * sum(w^2) / 2 over `variables`; AddGradients adds scale * w
// to each variable's gradient (call after the backward pass).
float L2Loss(const std::vector<Variable*>& variables, float scale);
void AddL2Gradients(const std::vector<Variable*>& variables, float scale);

}  // namespace taas::nn
