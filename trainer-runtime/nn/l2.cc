#include "taas/nn/l2.h"

namespace taas::nn {

float L2Loss(const std::vector<Variable*>& variables, float scale) {
  double sum = 0.0;
  for (const Variable* variable : variables) {
    for (float w : variable->value.values()) sum += static_cast<double>(w) * w;
  }
  return static_cast<float>(0.5 * scale * sum);
}

void AddL2Gradients(const std::vector<Variable*>& variables, float scale) {
  for (Variable* variable : variables) {
    const float* w = variable->value.data();
    float* g = variable->gradient.data();
    for (std::int64_t i = 0; i < variable->value.size(); ++i) g[i] += scale * w[i];
  }
}

}  // namespace taas::nn
