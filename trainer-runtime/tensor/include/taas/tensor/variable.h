// A trainable parameter as the model, the parameter servers and checkpoints see it.
#pragma once

#include <string>

#include "taas/tensor/tensor.h"

namespace taas {

// Layers own their Variables; the trainer runtime reads `value` and `gradient` through pointers the
// model registers, so a Variable must not move once registered. `name` is unique within a model
// ("dense1/kernel") and is the key under which parameter servers and checkpoints store it.
struct Variable {
  std::string name;
  Tensor value;
  Tensor gradient;  // Same shape as value; written by the layer's backward pass.
};

}  // namespace taas
