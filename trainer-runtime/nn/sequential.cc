#include "taas/nn/sequential.h"

namespace taas::nn {

const Tensor& Sequential::Forward(const Tensor& input, bool training) {
  const Tensor* x = &input;
  for (auto& layer : layers_) x = &layer->Forward(*x, training);
  return *x;
}

void Sequential::Backward(const Tensor& grad_output) {
  const Tensor* g = &grad_output;
  for (auto it = layers_.rbegin(); it != layers_.rend(); ++it) g = &(*it)->Backward(*g);
}

std::vector<Variable*> Sequential::variables() {
  std::vector<Variable*> result;
  for (auto& layer : layers_) {
    for (Variable* variable : layer->variables()) result.push_back(variable);
  }
  return result;
}

}  // namespace taas::nn
