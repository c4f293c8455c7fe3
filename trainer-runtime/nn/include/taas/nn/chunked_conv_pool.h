// Conv2D (with ReLU) followed by MaxPool2D, run `chunk` examples at a time so the convolution's
// output, the largest tensor of a small CNN, stays in cache instead of making a round trip to
// memory.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "taas/nn/conv2d.h"
#include "taas/nn/layer.h"
#include "taas/nn/max_pool2d.h"

namespace taas::nn {

// The convolution output is not kept, and Backward does not need it: the convolution's ReLU mask
// is applied on the pooled gradient (see MaxPool2D::set_relu_input); each chunk's pooling
// workspace is kept.
// Same results as the two layers in sequence; the name is "<conv name>+<pool name>", the
// variables are the convolution's ("<conv name>/kernel", ...). Input errors are the
// convolution's and the pool's, naming them.
class ChunkedConvPool final : public Layer {
 public:
  // `conv` must have Activation::kRelu and `chunk` be at least 1 (programming errors: the
  // constructor throws std::invalid_argument).
  ChunkedConvPool(std::unique_ptr<Conv2D> conv, std::unique_ptr<MaxPool2D> pool,
                  std::int64_t chunk);
  absl::StatusOr<const Tensor*> Forward(const Tensor& input, bool training) override;
  absl::StatusOr<const Tensor*> Backward(const Tensor& grad_output) override;
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

}  // namespace taas::nn
