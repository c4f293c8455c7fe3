// The L2 weight regulariser of TensorFlow 1, l2_regularizer(scale), applied by hand after the
// backward pass. A layer's own `kernel_regularizer` (layer.h) does the same inside Backward, which
// is what all-reduce training wants (a gradient is final, and sent, when its layer's Backward
// returns); these remain for models that regularise other variables.
#pragma once

#include <vector>

#include "taas/base/status.h"
#include "taas/tensor/variable.h"

namespace taas::nn {

// scale * sum(w^2) / 2 over `variables` (all on one device), each variable's sum accumulated in
// double. On another device than the host this runs on its kernels and waits for the result;
// errors name the variable.
absl::StatusOr<float> L2Loss(const std::vector<Variable*>& variables, float scale);
// Adds scale * w to each variable's gradient: call after the backward pass. Under all-reduce the
// runtime may already have sent a gradient once its layer's Backward returned (Sequential marks it
// ready): regularise a layer's kernel with its kernel_regularizer instead, or keep one bucket.
absl::Status AddL2Gradients(const std::vector<Variable*>& variables, float scale);

}  // namespace taas::nn
