#include "taas/nn/chunked_conv_pool.h"

#include <algorithm>
#include <stdexcept>

#include "layer_internal.h"
#include "taas/tensor/initializers.h"

namespace taas::nn {

using internal::Ensure;

ChunkedConvPool::ChunkedConvPool(std::unique_ptr<Conv2D> conv, std::unique_ptr<MaxPool2D> pool,
                                 std::int64_t chunk)
    : Layer(conv->name() + "+" + pool->name()),
      conv_(std::move(conv)),
      pool_(std::move(pool)),
      chunk_(chunk) {
  if (chunk_ < 1) throw std::invalid_argument(name() + ": chunk must be >= 1");
  if (!conv_->SkipReluMask()) {
    throw std::invalid_argument(name() + ": the convolution must have a ReLU activation");
  }
  // Each chunk's Backward would add the penalty's gradient again.
  if (conv_->regularizer().l2 != 0.0f) {
    throw std::invalid_argument(name() + ": the convolution must have no kernel_regularizer");
  }
}

void ChunkedConvPool::CopyChunk(const Tensor& from, std::int64_t begin, std::int64_t count,
                                Tensor& to) {
  Shape shape = from.shape();
  shape[0] = count;
  Ensure(to, shape);
  const std::int64_t per_example = from.size() / from.shape()[0];
  std::copy_n(from.data() + begin * per_example, count * per_example, to.data());
}

absl::StatusOr<const Tensor*> ChunkedConvPool::Forward(const Tensor& input, bool training) {
  // A Forward that fails half way leaves chunks of the last batch and of this one: no Backward.
  input_ = nullptr;
  if (!input.device().is_cpu()) {
    // Chunking keeps a chunk's convolution output in the host's cache; a device has no use for it.
    return absl::FailedPreconditionError(
        name() + ": runs on the host only, the input is on " + DeviceName(input.device()) +
        ": use Conv2D and MaxPool2D as two layers (the Fashion-MNIST CNN's conv1_chunk = 0)");
  }
  if (input.shape().size() != 4 || input.shape()[0] <= 0) {
    return internal::InputShapeError(name(), "[N >= 1, H, W, C]", input.shape());
  }
  const std::int64_t n = input.shape()[0];
  for (std::int64_t begin = 0; begin < n; begin += chunk_) {
    const std::int64_t count = std::min(chunk_, n - begin);
    CopyChunk(input, begin, count, chunk_input_);
    TAAS_ASSIGN_OR_RETURN(const Tensor* convolved, conv_->Forward(chunk_input_, training));
    TAAS_ASSIGN_OR_RETURN(const Tensor* pooled, pool_->Forward(*convolved, training));
    const auto workspace = pool_->Workspace();
    const std::size_t index = static_cast<std::size_t>(begin / chunk_);
    if (workspaces_.size() <= index) workspaces_.resize(index + 1);
    workspaces_[index].assign(workspace.begin(), workspace.end());
    if (begin == 0) {
      Shape shape = pooled->shape();
      shape[0] = n;
      Ensure(output_, shape);
    }
    std::copy_n(pooled->data(), pooled->size(), output_.data() + begin * (output_.size() / n));
  }
  input_ = &input;
  return &output_;
}

absl::StatusOr<const Tensor*> ChunkedConvPool::Backward(const Tensor& grad_output) {
  TAAS_RETURN_IF_ERROR(internal::CheckGradient(name(), input_ != nullptr, grad_output, output_));
  conv_->set_input_gradient(input_gradient_);
  const std::int64_t n = input_->shape()[0];
  Variable& kernel = conv_->kernel();
  Variable& bias = conv_->bias();
  Ensure(kernel_grad_, kernel.value.shape());
  Ensure(bias_grad_, bias.value.shape());
  Zeros(kernel_grad_);
  Zeros(bias_grad_);
  if (input_gradient_) Ensure(input_grad_, input_->shape());
  // The ReLU mask of the convolution, applied on the pooled gradient (see MaxPool2D).
  internal::ReluMask(output_, grad_output, masked_grad_);
  for (std::int64_t begin = 0; begin < n; begin += chunk_) {
    const std::int64_t count = std::min(chunk_, n - begin);
    // Point both layers at this chunk: the conv at its input, the pool at its shape and argmax.
    CopyChunk(*input_, begin, count, chunk_input_);
    TAAS_ASSIGN_OR_RETURN(const Tensor* convolved, conv_->Rebind(chunk_input_));
    TAAS_RETURN_IF_ERROR(pool_->Rebind(*convolved).status());
    const auto& saved = workspaces_[static_cast<std::size_t>(begin / chunk_)];
    std::copy(saved.begin(), saved.end(), pool_->Workspace().begin());
    CopyChunk(masked_grad_, begin, count, chunk_grad_);
    TAAS_ASSIGN_OR_RETURN(const Tensor* pooled_grad, pool_->Backward(chunk_grad_));
    TAAS_ASSIGN_OR_RETURN(const Tensor* input_grad, conv_->Backward(*pooled_grad));
    for (std::int64_t i = 0; i < kernel_grad_.size(); ++i) {
      kernel_grad_.data()[i] += kernel.gradient.data()[i];
    }
    for (std::int64_t i = 0; i < bias_grad_.size(); ++i) {
      bias_grad_.data()[i] += bias.gradient.data()[i];
    }
    if (input_gradient_) {
      std::copy_n(input_grad->data(), input_grad->size(),
                  input_grad_.data() + begin * (input_->size() / n));
    }
  }
  std::copy_n(kernel_grad_.data(), kernel_grad_.size(), kernel.gradient.data());
  std::copy_n(bias_grad_.data(), bias_grad_.size(), bias.gradient.data());
  if (!input_gradient_) input_grad_ = Tensor();
  return &input_grad_;
}

}  // namespace taas::nn
