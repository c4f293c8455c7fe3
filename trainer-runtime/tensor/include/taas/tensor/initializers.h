// Weight initialisers with explicit seeds, as Keras/TF define them.
#pragma once

#include <cstdint>

#include "taas/tensor/tensor.h"

namespace taas {

// Uniform in [-limit, limit], limit = sqrt(6 / (fan_in + fan_out)) (Keras `glorot_uniform`).
void GlorotUniform(Tensor& tensor, std::int64_t fan_in, std::int64_t fan_out, std::uint64_t seed);
// Normal(0, stddev) with draws beyond two standard deviations redrawn (`tf.truncated_normal`).
void TruncatedNormal(Tensor& tensor, float stddev, std::uint64_t seed);
void Constant(Tensor& tensor, float value);
inline void Zeros(Tensor& tensor) { Constant(tensor, 0.0f); }

}  // namespace taas
