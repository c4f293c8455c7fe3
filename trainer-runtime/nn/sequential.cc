#include "taas/nn/sequential.h"

#include <time.h>

#include "taas/nn/max_pool2d.h"

namespace taas::nn {
namespace {

// CPU time of the calling thread: with one compute thread this is the layer's own cost, unskewed
// by other processes on a busy machine.
double Now() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

}  // namespace

absl::StatusOr<const Tensor*> Sequential::Forward(const Tensor& input, bool training) {
  const Tensor* x = &input;
  for (std::size_t i = 0; i < layers_.size(); ++i) {
    const double start = timing_ ? Now() : 0.0;
    TAAS_ASSIGN_OR_RETURN(x, layers_[i]->Forward(*x, training));
    if (timing_) timings_[i].forward_seconds += Now() - start;
  }
  return x;
}

absl::Status Sequential::Backward(const Tensor& grad_output) {
  const Tensor* g = &grad_output;
  for (std::size_t i = layers_.size(); i-- > 0;) {
    const double start = timing_ ? Now() : 0.0;
    TAAS_ASSIGN_OR_RETURN(g, layers_[i]->Backward(*g));
    if (timing_) timings_[i].backward_seconds += Now() - start;
    for (const Variable* variable : layers_[i]->variables()) MarkGradientReady(*variable);
  }
  return absl::OkStatus();
}

absl::Status Sequential::AddRegularizationLoss(Tensor& total) {
  for (auto& layer : layers_) TAAS_RETURN_IF_ERROR(layer->AddRegularizationLoss(total));
  return absl::OkStatus();
}

void Sequential::EnableTiming(bool enabled) {
  timing_ = enabled;
  timings_.clear();
  if (enabled) {
    for (auto& layer : layers_) timings_.push_back({layer->name()});
  }
}

void Sequential::Wire(Layer& next) {
  if (layers_.empty()) {
    next.set_input_gradient(false);
    return;
  }
  if (auto* pool = dynamic_cast<MaxPool2D*>(&next); pool != nullptr) {
    if (layers_.back()->SkipReluMask()) pool->set_relu_input(true);
  }
}

std::vector<Variable*> Sequential::variables() {
  std::vector<Variable*> result;
  for (auto& layer : layers_) {
    for (Variable* variable : layer->variables()) result.push_back(variable);
  }
  return result;
}

}  // namespace taas::nn
