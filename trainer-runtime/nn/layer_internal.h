// What the layers share and a model never sees: buffer reuse, the ReLU mask, the shape errors of
// the layer contract (layer.h) and the one place oneDNN's exceptions become a Status.
#pragma once

#include <oneapi/dnnl/dnnl.hpp>
#include <string>

#include "taas/base/status.h"
#include "taas/tensor/tensor.h"

namespace taas::nn::internal {

// Makes `tensor` have `shape`, reallocating only when the shape changes.
void Ensure(Tensor& tensor, const Shape& shape);

// grad * (output > 0) into `out`.
void ReluMask(const Tensor& output, const Tensor& grad, Tensor& out);

// InvalidArgument "<layer>: expected input <expected>, got <actual>"; `expected` is a pattern
// such as "[N, 784]".
absl::Status InputShapeError(const std::string& layer, const std::string& expected,
                             const Shape& actual);

// The checks every Backward starts with: FailedPrecondition unless the last Forward succeeded
// (`forward_ran`), InvalidArgument unless `grad_output` has the shape of `output`.
absl::Status CheckGradient(const std::string& layer, bool forward_ran, const Tensor& grad_output,
                           const Tensor& output);

// Runs `body` (oneDNN calls; it returns a Status or a StatusOr) and returns its result, or
// Internal naming the layer when oneDNN throws (an unsupported shape, a primitive that cannot be
// created): oneDNN's exceptions end here. A try block costs nothing on the path that does not
// throw.
template <typename Body>
auto CallDnnl(const std::string& layer, Body&& body) -> decltype(body()) {
  try {
    return body();
  } catch (const dnnl::error& error) {
    return absl::InternalError(layer + ": oneDNN: " + error.what());
  }
}

}  // namespace taas::nn::internal
