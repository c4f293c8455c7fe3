// The L2 weight regulariser, TensorFlow's l2_regularizer(scale).
#pragma once

#include <vector>

#include "taas/base/status.h"
#include "taas/tensor/variable.h"

namespace taas::nn {

// scale * sum(w^2) / 2 over `variables`, accumulated in double. Variables on another device than
// the host run on its registered kernels (device_kernels.h); their errors name the variable.
absl::StatusOr<float> L2Loss(const std::vector<Variable*>& variables, float scale);
// Adds scale * w to each variable's gradient: call after the backward pass.
absl::Status AddL2Gradients(const std::vector<Variable*>& variables, float scale);

}  // namespace taas::nn
