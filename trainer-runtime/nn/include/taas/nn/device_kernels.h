// The seam through which a layer runs on the device its input lives on.
//
// Every device's kernels implement DeviceKernels: the host's are the CPU engine's (host_kernels.h,
// returned by KernelsFor(kCpu)); an engine for another device (the CUDA engine, taas_nn_cuda)
// implements it and registers it for its DeviceType, as it registers the device's memory
// (taas/tensor/device.h). A layer calls the kernels of its input's device, with its variables and
// gradients on that same device and its outputs allocated there. nn itself holds no code of any
// device but the host.
//
// Contract of every kernel below: the layer has checked the shapes (a kernel may assume them),
// every tensor is on one device of the kernels' type, outputs already have their shape on that
// device. A kernel returns OK, or Internal naming the device library's call that failed (the layer
// adds its own name); it never throws. A kernel of a device other than the host may return before
// the device has run it (work queued in order on the device): nothing here waits for a device, and
// no kernel copies a result to the host. Calls for one device come from one thread at a time per
// model replica; an engine serialises what its devices share.
#pragma once

#include <cstdint>
#include <memory>
#include <span>

#include "taas/base/status.h"
#include "taas/tensor/device.h"
#include "taas/tensor/tensor.h"

namespace taas::nn {

// What a device keeps for one layer between calls (descriptors, chosen algorithms, a reordered
// kernel). The layer owns it and hands it back on every call; the kernels create it on first use.
class DeviceState {
 public:
  virtual ~DeviceState() = default;
};

// A convolution as the layer resolved it: input [n, h, w, c] (NHWC), kernel [kernel_size,
// kernel_size, c, filters] (TF's HWIO), output [n, out_h, out_w, filters], cross-correlation
// with TF's padding split (the extra row or column at the bottom or right).
struct ConvGeometry {
  std::int64_t n = 0, h = 0, w = 0, c = 0;
  std::int64_t filters = 0, kernel_size = 0, strides = 1;
  std::int64_t pad_top = 0, pad_bottom = 0, pad_left = 0, pad_right = 0;
  std::int64_t out_h = 0, out_w = 0;
};

// Max pooling without padding: input [n, h, w, c], output [n, out_h, out_w, c].
struct PoolGeometry {
  std::int64_t n = 0, h = 0, w = 0, c = 0;
  std::int64_t window = 0, strides = 0;
  std::int64_t out_h = 0, out_w = 0;
};

class DeviceKernels {
 public:
  virtual ~DeviceKernels() = default;

  // y [n, units] = x [n, inputs] kernel [inputs, units] + bias, then max(y, 0) when `relu`.
  virtual absl::Status DenseForward(const Tensor& x, const Tensor& kernel, const Tensor& bias,
                                    bool relu, Tensor& y) = 0;
  // kernel_grad = x^T dy, bias_grad = dy's column sums and, unless `dx` is null, dx = dy kernel^T.
  virtual absl::Status DenseBackward(const Tensor& x, const Tensor& kernel, const Tensor& dy,
                                     Tensor& kernel_grad, Tensor& bias_grad, Tensor* dx) = 0;

  // y = conv(x, kernel) + bias, then max(y, 0) when `relu`.
  virtual absl::Status ConvForward(std::unique_ptr<DeviceState>& state, const ConvGeometry& g,
                                   const Tensor& x, const Tensor& kernel, const Tensor& bias,
                                   bool relu, Tensor& y) = 0;
  // The gradients of the last ConvForward on `state` with these x and kernel, dy already masked
  // by the ReLU; dx unless null.
  virtual absl::Status ConvBackward(std::unique_ptr<DeviceState>& state, const ConvGeometry& g,
                                    const Tensor& x, const Tensor& kernel, const Tensor& dy,
                                    Tensor& kernel_grad, Tensor& bias_grad, Tensor* dx) = 0;

  virtual absl::Status MaxPoolForward(std::unique_ptr<DeviceState>& state, const PoolGeometry& g,
                                      const Tensor& x, Tensor& y) = 0;
  // dx: each window's gradient goes to the element its maximum came from (one of them on ties).
  virtual absl::Status MaxPoolBackward(std::unique_ptr<DeviceState>& state, const PoolGeometry& g,
                                       const Tensor& x, const Tensor& y, const Tensor& dy,
                                       Tensor& dx) = 0;

  // y = max(x, 0).
  virtual absl::Status Relu(const Tensor& x, Tensor& y) = 0;
  // out = dy where y > 0, else 0.
  virtual absl::Status ReluMask(const Tensor& y, const Tensor& dy, Tensor& out) = 0;
  // Inverted dropout: mask = 0 with probability `rate`, else 1 / (1 - rate), drawn from `seed`
  // alone (the same seed drops the same elements); y = x * mask.
  virtual absl::Status Dropout(const Tensor& x, float rate, std::uint64_t seed, Tensor& mask,
                               Tensor& y) = 0;
  // out = a * b, element-wise.
  virtual absl::Status Multiply(const Tensor& a, const Tensor& b, Tensor& out) = 0;
  // to = from (the same element count).
  virtual absl::Status Copy(const Tensor& from, Tensor& to) = 0;

  // Softmax cross-entropy of logits [n, classes] against host `labels` (n of them, each already
  // checked to be in [0, classes)): grad = (softmax - onehot) / n, and `stats` (kLossStats
  // elements) = the mean of the rows' losses (summed in double in row order), the rows whose
  // argmax is the label, and their fraction of n. An empty batch gives zero stats.
  virtual absl::Status SoftmaxCrossEntropy(const Tensor& logits,
                                           std::span<const std::int32_t> labels, Tensor& grad,
                                           Tensor& stats) = 0;

  // total[0] += scale * sum(x^2), the sum accumulated in double in a fixed order.
  virtual absl::Status AddSumOfSquares(const Tensor& x, float scale, Tensor& total) = 0;
  // y += alpha * x.
  virtual absl::Status Axpy(float alpha, const Tensor& x, Tensor& y) = 0;
};

// The elements of SoftmaxCrossEntropy's `stats`.
enum LossStat : std::int64_t { kLossMean = 0, kLossCorrect = 1, kLossAccuracy = 2, kLossStats = 3 };

// The kernels for `type`: the host's (host_kernels.h) for kCpu, the registered ones for another
// type, nullptr for a type no engine registered.
DeviceKernels* KernelsFor(DeviceType type);

// Makes `kernels` (not owned; it must outlive every layer that runs on the type's devices) run
// layers whose input is on a device of `type` (not kCpu: refused, returns nullptr); returns the
// one it replaces. An engine calls this once at start-up, beside RegisterDeviceMemory.
DeviceKernels* RegisterDeviceKernels(DeviceType type, DeviceKernels* kernels);

}  // namespace taas::nn
