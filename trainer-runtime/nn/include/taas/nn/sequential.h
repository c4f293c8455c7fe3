// A stack of layers run in order: the shape of both Fashion-MNIST models.
#pragma once

#include <memory>
#include <vector>

#include "taas/nn/layers.h"

namespace taas::nn {

class Sequential {
 public:
  Sequential() = default;
  Sequential(const Sequential&) = delete;
  Sequential& operator=(const Sequential&) = delete;

  // Appends `layer` and returns it; the first layer skips its input gradient.
  template <typename L>
  L& Add(std::unique_ptr<L> layer) {
    L& result = *layer;
    if (layers_.empty()) result.set_input_gradient(false);
    layers_.push_back(std::move(layer));
    return result;
  }

  // Output of the last layer (the logits); `input` must stay alive until Backward returns.
  const Tensor& Forward(const Tensor& input, bool training);
  // Back-propagates dL/d(output), overwriting every variable's gradient.
  void Backward(const Tensor& grad_output);
  // Every layer's variables in layer order, kernel before bias; names are unique.
  std::vector<Variable*> variables();
  const std::vector<std::unique_ptr<Layer>>& layers() const { return layers_; }

 private:
  std::vector<std::unique_ptr<Layer>> layers_;
};

}  // namespace taas::nn
