// The L2 weight regulariser, TensorFlow's l2_regularizer(scale).
#pragma once

#include <vector>

#include "taas/tensor/variable.h"

namespace taas::nn {

// scale * sum(w^2) / 2 over `variables`.
float L2Loss(const std::vector<Variable*>& variables, float scale);
// Adds scale * w to each variable's gradient: call after the backward pass.
void AddL2Gradients(const std::vector<Variable*>& variables, float scale);

}  // namespace taas::nn
