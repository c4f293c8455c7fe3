// A stack of layers run in order: the shape of both Fashion-MNIST models.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "taas/nn/layer.h"

namespace taas::nn {

class Sequential {
 public:
  Sequential() = default;
  Sequential(const Sequential&) = delete;
  Sequential& operator=(const Sequential&) = delete;

  // Appends `layer` and returns it. The first layer skips its input gradient; a MaxPool2D after
  // a layer with a fused ReLU applies the ReLU mask on its 4x smaller output gradient instead.
  template <typename L>
  L& Add(std::unique_ptr<L> layer) {
    L& result = *layer;
    Wire(result);
    layers_.push_back(std::move(layer));
    return result;
  }

  // Output of the last layer (the logits); `input` must stay alive until Backward returns. The
  // first layer's error when `input` does not fit (or a later layer's), unchanged.
  absl::StatusOr<const Tensor*> Forward(const Tensor& input, bool training);
  // Back-propagates dL/d(output), overwriting every variable's gradient; the first error of a
  // layer (a gradient not of the output's shape, no successful Forward), unchanged. Once a layer's
  // Backward returned, its variables' gradients are final: each is marked ready
  // (MarkGradientReady, taas/tensor/variable.h), so the all-reduce trainer sends them while the
  // layers below still compute.
  absl::Status Backward(const Tensor& grad_output);
  // Adds every layer's regularization losses (Layer::AddRegularizationLoss) to total[0].
  absl::Status AddRegularizationLoss(Tensor& total);
  // Every layer's variables in layer order, kernel before bias; names are unique.
  std::vector<Variable*> variables();
  const std::vector<std::unique_ptr<Layer>>& layers() const { return layers_; }

  // Per-layer CPU time of the calling thread in Forward and Backward, for profiling with one
  // compute thread (SetComputeThreads(1)); off by default.
  struct LayerTiming {
    std::string name;
    double forward_seconds = 0.0;
    double backward_seconds = 0.0;
  };
  void EnableTiming(bool enabled);
  const std::vector<LayerTiming>& timings() const { return timings_; }

 private:
  void Wire(Layer& next);

  std::vector<std::unique_ptr<Layer>> layers_;
  bool timing_ = false;
  std::vector<LayerTiming> timings_;
};

}  // namespace taas::nn
