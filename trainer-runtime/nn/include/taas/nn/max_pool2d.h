// Max pooling, input [N, H, W, C] (NHWC), no padding (Keras "valid"): on oneDNN on the host, on
// the registered device kernels (device_kernels.h) for an input on another device.
#pragma once

#include <cstdint>
#include <list>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <utility>

#include "taas/nn/compute.h"
#include "taas/nn/device_kernels.h"
#include "taas/nn/layer.h"

namespace taas::nn {

// Keras's MaxPool2D arguments (square windows), with Keras's defaults.
struct MaxPool2DOptions {
  std::string name;
  std::int64_t pool_size = 2;                          // windows are pool_size x pool_size
  std::optional<std::int64_t> strides = std::nullopt;  // unset: pool_size, as in Keras
};

// Output [N, (H - pool_size) / strides + 1, (W - pool_size) / strides + 1, C]; no variables.
class MaxPool2D final : public Layer {
 public:
  MaxPool2D(ComputeContext& context, MaxPool2DOptions options);
  ~MaxPool2D() override;
  std::string ImplementationInfo() const;
  // Input shapes the layer holds primitives and workspaces for on the host: at most
  // kMaxShapePlans.
  std::size_t planned_shapes() const { return plans_.size(); }
  // The input is a ReLU's output whose layer skips its own mask (SkipReluMask): Backward then
  // zeroes the gradient of windows whose maximum is 0, which is exactly the ReLU's mask at the
  // positions the gradient flows to, on a tensor pool_size^2 times smaller.
  void set_relu_input(bool enabled) { relu_input_ = enabled; }
  // The argmax workspace of the last Forward on the host, which Backward reads: a caller that
  // interleaves several batches saves and restores it (ChunkedConvPool).
  std::span<std::uint8_t> Workspace();
  // As Conv2D::Rebind; the workspace must be restored separately.
  absl::StatusOr<const Tensor*> Rebind(const Tensor& input);
  absl::StatusOr<const Tensor*> Forward(const Tensor& input, bool training) override;
  absl::StatusOr<const Tensor*> Backward(const Tensor& grad_output) override;

 private:
  struct Plan;
  // The primitives for `input_shape`, created on first use; InvalidArgument for an input that is
  // not [N, H, W, C] or smaller than a window.
  absl::StatusOr<Plan*> PlanFor(const Shape& input_shape);
  // The output size for `input_shape`; InvalidArgument for an input that is not [N, H, W, C] or
  // smaller than a window.
  absl::StatusOr<PoolGeometry> GeometryFor(const Shape& input_shape) const;
  absl::StatusOr<const Tensor*> ForwardOnDevice(const Tensor& input);
  absl::StatusOr<const Tensor*> BackwardOnDevice(const Tensor& grad_output);

  ComputeContext& context_;
  std::int64_t pool_size_, strides_;
  bool relu_input_ = false;
  // Most recently used first, at most kMaxShapePlans (layer.h; internal::ShapePlans).
  std::list<std::pair<Shape, std::unique_ptr<Plan>>> plans_;
  Plan* plan_ = nullptr;
  PoolGeometry geometry_;                      // of the last Forward on a device
  std::unique_ptr<DeviceState> device_state_;  // the device kernels' own
  const Tensor* input_ = nullptr;
  Tensor output_, masked_grad_, input_grad_;
};

}  // namespace taas::nn
