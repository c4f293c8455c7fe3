// Inverted dropout: in training, zeroes each element with probability `rate` and scales the rest
// by 1 / (1 - rate); the identity in evaluation. Inputs of any shape.
#pragma once

#include <cstdint>
#include <random>
#include <string>

#include "taas/nn/layer.h"

namespace taas::nn {

// Keras's Dropout arguments.
struct DropoutOptions {
  std::string name;
  float rate = 0.0f;  // in [0, 1); anything else is a programming error (the constructor throws)
  std::uint64_t seed = 0;  // of the mask's std::mt19937_64: the same seed drops the same elements
};

class Dropout final : public Layer {
 public:
  explicit Dropout(DropoutOptions options);
  absl::StatusOr<const Tensor*> Forward(const Tensor& input, bool training) override;
  absl::StatusOr<const Tensor*> Backward(const Tensor& grad_output) override;

 private:
  float rate_;
  std::mt19937_64 rng_;
  bool forward_ran_ = false;
  bool applied_ = false;
  Tensor mask_, output_, input_grad_;
};

}  // namespace taas::nn
