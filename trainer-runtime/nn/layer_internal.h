// What the layers share and a model never sees: buffer reuse, the ReLU mask, the shape errors of
// the layer contract (layer.h) and the one place oneDNN's exceptions become a Status.
#pragma once

#include <oneapi/dnnl/dnnl.hpp>
#include <string>

#include "taas/base/status.h"
#include "taas/tensor/initializers.h"
#include "taas/tensor/tensor.h"
#include "taas/tensor/variable.h"

namespace taas::nn::internal {

// Fills `variable.value` with `initializer`, seeded with the hash of the variable's name unless the
// initialiser fixes its own seed, so every replica and every run builds the same values. Bad
// parameters are a programming error (layer.h): std::invalid_argument
// "<layer>: <field>: <Initializer::Validate()'s message>", e.g.
// "dense1: kernel_initializer: stddev must be a finite number > 0, got -1".
void InitializeVariable(const std::string& layer, const char* field, const Initializer& initializer,
                        Variable& variable);

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
