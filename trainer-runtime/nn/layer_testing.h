// What the layer tests share: random inputs, gradients checked by central differences, and a
// layer call that must succeed.
#pragma once

#include <cstdint>
#include <string>

#include "taas/nn/layer.h"

namespace taas::nn::testing {

// Uniform in [-scale, scale] from `seed`.
Tensor Random(const Shape& shape, std::uint64_t seed, float scale = 1.0f);

// |analytic - numeric| within 2% (absolute below 1).
void CheckClose(double analytic, double numeric, const std::string& what);

// Compares the layer's input and variable gradients with central differences of
// f = sum(layer(x) * weights), weights random from `seed`.
void GradientCheck(Layer& layer, Tensor x, std::uint64_t seed);

// The tensor of a Forward or Backward that must succeed (a failed REQUIRE otherwise).
const Tensor& Ok(const absl::StatusOr<const Tensor*>& result);

}  // namespace taas::nn::testing
