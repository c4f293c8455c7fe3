#include "taas/nn/host_kernels.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <oneapi/dnnl/dnnl.hpp>
#include <random>
#include <string>

#include "layer_internal.h"
#include "taas/nn/compute.h"
#include "taas/nn/conv2d.h"
#include "taas/nn/max_pool2d.h"

namespace taas::nn {
namespace {

// A host tensor over `tensor`'s elements, for a layer that keeps tensors of its own.
Tensor ViewOf(const Tensor& tensor) {
  return Tensor::View(const_cast<float*>(tensor.data()), tensor.shape(), Device::Cpu());
}

// `from`'s elements into `to` (the same count: the kernels' contract).
absl::Status CopyElements(const Tensor& from, Tensor& to) {
  if (from.size() != to.size()) {
    return absl::InternalError("a host layer gave " + ShapeString(from.shape()) + " for " +
                               ShapeString(to.shape()));
  }
  std::copy_n(from.data(), from.size(), to.data());
  return absl::OkStatus();
}

// A host convolution layer for one geometry, run over the caller's tensors. The layer keeps a
// pointer to its input between Forward and Backward: `input` is that input, a view of the caller's.
struct ConvState final : DeviceState {
  ComputeContext context;
  std::unique_ptr<Conv2D> layer;
  ConvGeometry geometry;
  bool relu = false;
  Tensor input;
};

struct PoolState final : DeviceState {
  ComputeContext context;
  std::unique_ptr<MaxPool2D> layer;
  PoolGeometry geometry;
  Tensor input;
};

bool SameLayer(const ConvGeometry& a, const ConvGeometry& b) {
  return a.c == b.c && a.filters == b.filters && a.kernel_size == b.kernel_size &&
         a.strides == b.strides && a.pad_top == b.pad_top && a.pad_bottom == b.pad_bottom &&
         a.pad_left == b.pad_left && a.pad_right == b.pad_right;
}

// The state's layer for `g`, made on first use or when the geometry changed. Padding: a geometry
// with none is VALID, else TF's SAME (the only other one a Conv2D computes).
absl::StatusOr<ConvState*> ConvStateFor(std::unique_ptr<DeviceState>& state, const ConvGeometry& g,
                                        bool relu) {
  auto* typed = dynamic_cast<ConvState*>(state.get());
  if (state && typed == nullptr) {
    return absl::InternalError("a layer passed another kind of layer's state");
  }
  if (typed != nullptr && SameLayer(typed->geometry, g) && typed->relu == relu) return typed;
  auto made = std::make_unique<ConvState>();
  const bool padded = g.pad_top + g.pad_bottom + g.pad_left + g.pad_right > 0;
  made->layer = std::make_unique<Conv2D>(
      made->context, Conv2DOptions{.name = "host_conv",
                                   .in_channels = g.c,
                                   .filters = g.filters,
                                   .kernel_size = g.kernel_size,
                                   .strides = g.strides,
                                   .padding = padded ? Padding::kSame : Padding::kValid,
                                   .activation = relu ? Activation::kRelu : Activation::kNone});
  // The contract hands ConvBackward a gradient already masked by the ReLU.
  made->layer->SkipReluMask();
  made->geometry = g;
  made->relu = relu;
  typed = made.get();
  state = std::move(made);
  return typed;
}

class CpuKernels final : public DeviceKernels {
 public:
  absl::Status DenseForward(const Tensor& x, const Tensor& kernel, const Tensor& bias, bool relu,
                            Tensor& y) override {
    const std::int64_t n = x.shape()[0], in = kernel.shape()[0], out = kernel.shape()[1];
    float* rows = y.data();
    for (std::int64_t r = 0; r < n; ++r) std::copy_n(bias.data(), out, rows + r * out);
    FollowComputeThreads();
    dnnl::sgemm('N', 'N', n, out, in, 1.0f, x.data(), in, kernel.data(), out, 1.0f, rows, out);
    if (relu) {
      for (std::int64_t i = 0; i < y.size(); ++i) rows[i] = std::max(rows[i], 0.0f);
    }
    return absl::OkStatus();
  }

  absl::Status DenseBackward(const Tensor& x, const Tensor& kernel, const Tensor& dy,
                             Tensor& kernel_grad, Tensor& bias_grad, Tensor* dx) override {
    const std::int64_t n = dy.shape()[0], in = kernel.shape()[0], out = kernel.shape()[1];
    FollowComputeThreads();
    dnnl::sgemm('T', 'N', in, out, n, 1.0f, x.data(), in, dy.data(), out, 0.0f, kernel_grad.data(),
                out);
    float* db = bias_grad.data();
    std::fill_n(db, out, 0.0f);
    for (std::int64_t r = 0; r < n; ++r) {
      const float* row = dy.data() + r * out;
      for (std::int64_t c = 0; c < out; ++c) db[c] += row[c];
    }
    if (dx != nullptr) {
      dnnl::sgemm('N', 'T', n, in, out, 1.0f, dy.data(), out, kernel.data(), out, 0.0f, dx->data(),
                  in);
    }
    return absl::OkStatus();
  }

  absl::Status ConvForward(std::unique_ptr<DeviceState>& state, const ConvGeometry& g,
                           const Tensor& x, const Tensor& kernel, const Tensor& bias, bool relu,
                           Tensor& y) override {
    TAAS_ASSIGN_OR_RETURN(ConvState * s, ConvStateFor(state, g, relu));
    if (g.n == 0) return absl::OkStatus();
    s->layer->kernel().value = ViewOf(kernel);
    s->layer->bias().value = ViewOf(bias);
    s->input = ViewOf(x);
    TAAS_ASSIGN_OR_RETURN(const Tensor* output, s->layer->Forward(s->input, true));
    return CopyElements(*output, y);
  }

  absl::Status ConvBackward(std::unique_ptr<DeviceState>& state, const ConvGeometry& g,
                            const Tensor& x, const Tensor& kernel, const Tensor& dy,
                            Tensor& kernel_grad, Tensor& bias_grad, Tensor* dx) override {
    auto* s = dynamic_cast<ConvState*>(state.get());
    if (s == nullptr || !SameLayer(s->geometry, g)) {
      return absl::InternalError("convolution backward without its forward pass");
    }
    if (g.n == 0) {
      std::fill_n(kernel_grad.data(), kernel_grad.size(), 0.0f);
      std::fill_n(bias_grad.data(), bias_grad.size(), 0.0f);
      return absl::OkStatus();
    }
    s->layer->kernel().value = ViewOf(kernel);
    s->layer->kernel().gradient = ViewOf(kernel_grad);
    s->layer->bias().gradient = ViewOf(bias_grad);
    s->input = ViewOf(x);
    s->layer->set_input_gradient(dx != nullptr);
    TAAS_ASSIGN_OR_RETURN(const Tensor* input_grad, s->layer->Backward(ViewOf(dy)));
    return dx != nullptr ? CopyElements(*input_grad, *dx) : absl::OkStatus();
  }

  absl::Status MaxPoolForward(std::unique_ptr<DeviceState>& state, const PoolGeometry& g,
                              const Tensor& x, Tensor& y) override {
    auto* s = dynamic_cast<PoolState*>(state.get());
    if (state && s == nullptr) {
      return absl::InternalError("a layer passed another kind of layer's state");
    }
    if (s == nullptr || s->geometry.window != g.window || s->geometry.strides != g.strides) {
      auto made = std::make_unique<PoolState>();
      made->layer = std::make_unique<MaxPool2D>(
          made->context,
          MaxPool2DOptions{.name = "host_pool", .pool_size = g.window, .strides = g.strides});
      made->geometry = g;
      s = made.get();
      state = std::move(made);
    }
    if (g.n == 0 || g.c == 0) return absl::OkStatus();
    s->input = ViewOf(x);
    TAAS_ASSIGN_OR_RETURN(const Tensor* output, s->layer->Forward(s->input, true));
    return CopyElements(*output, y);
  }

  absl::Status MaxPoolBackward(std::unique_ptr<DeviceState>& state, const PoolGeometry& g,
                               const Tensor& x, const Tensor&, const Tensor& dy,
                               Tensor& dx) override {
    auto* s = dynamic_cast<PoolState*>(state.get());
    if (s == nullptr) return absl::InternalError("pooling backward without its forward pass");
    if (g.n == 0 || g.c == 0) return absl::OkStatus();
    s->input = ViewOf(x);
    TAAS_ASSIGN_OR_RETURN(const Tensor* input_grad, s->layer->Backward(ViewOf(dy)));
    return CopyElements(*input_grad, dx);
  }

  absl::Status Relu(const Tensor& x, Tensor& y) override {
    const float* in = x.data();
    float* out = y.data();
    for (std::int64_t i = 0; i < x.size(); ++i) out[i] = std::max(in[i], 0.0f);
    return absl::OkStatus();
  }

  absl::Status ReluMask(const Tensor& y, const Tensor& dy, Tensor& out) override {
    internal::ReluMask(y, dy, out);
    return absl::OkStatus();
  }

  absl::Status Dropout(const Tensor& x, float rate, std::uint64_t seed, Tensor& mask,
                       Tensor& y) override {
    const float scale = 1.0f / (1.0f - rate);
    std::mt19937_64 rng(seed);
    std::uniform_real_distribution<float> uniform(0.0f, 1.0f);
    float* m = mask.data();
    float* out = y.data();
    const float* in = x.data();
    for (std::int64_t i = 0; i < x.size(); ++i) {
      m[i] = uniform(rng) < rate ? 0.0f : scale;
      out[i] = in[i] * m[i];
    }
    return absl::OkStatus();
  }

  absl::Status Multiply(const Tensor& a, const Tensor& b, Tensor& out) override {
    for (std::int64_t i = 0; i < a.size(); ++i) out.data()[i] = a.data()[i] * b.data()[i];
    return absl::OkStatus();
  }

  absl::Status Copy(const Tensor& from, Tensor& to) override {
    std::copy_n(from.data(), from.size(), to.data());
    return absl::OkStatus();
  }

  absl::Status SoftmaxCrossEntropy(const Tensor& logits, std::span<const std::int32_t> labels,
                                   Tensor& grad, Tensor& stats) override {
    const std::int64_t n = logits.shape()[0], classes = logits.shape()[1];
    double total = 0.0;
    std::int64_t correct = 0;
    const float inv_n = n > 0 ? 1.0f / static_cast<float>(n) : 0.0f;
    for (std::int64_t r = 0; r < n; ++r) {
      const float* z = logits.data() + r * classes;
      float* g = grad.data() + r * classes;
      const std::int32_t label = labels[static_cast<std::size_t>(r)];
      const std::int64_t argmax = std::max_element(z, z + classes) - z;
      const float max = z[argmax];
      double sum = 0.0;
      for (std::int64_t c = 0; c < classes; ++c) {
        g[c] = std::exp(z[c] - max);
        sum += g[c];
      }
      total += std::log(sum) - (z[label] - max);
      const float inv_sum = static_cast<float>(1.0 / sum);
      for (std::int64_t c = 0; c < classes; ++c) g[c] = g[c] * inv_sum * inv_n;
      g[label] -= inv_n;
      if (argmax == label) ++correct;
    }
    float* out = stats.data();
    out[kLossMean] = n > 0 ? static_cast<float>(total / static_cast<double>(n)) : 0.0f;
    out[kLossCorrect] = static_cast<float>(correct);
    out[kLossAccuracy] = n > 0 ? static_cast<float>(correct) / static_cast<float>(n) : 0.0f;
    return absl::OkStatus();
  }

  absl::Status AddSumOfSquares(const Tensor& x, float scale, Tensor& total) override {
    double sum = 0.0;
    for (std::int64_t i = 0; i < x.size(); ++i) {
      sum += static_cast<double>(x.data()[i]) * x.data()[i];
    }
    total.data()[0] += static_cast<float>(static_cast<double>(scale) * sum);
    return absl::OkStatus();
  }

  absl::Status Axpy(float alpha, const Tensor& x, Tensor& y) override {
    for (std::int64_t i = 0; i < x.size(); ++i) y.data()[i] += alpha * x.data()[i];
    return absl::OkStatus();
  }
};

}  // namespace

DeviceKernels& HostKernels() {
  static CpuKernels kernels;
  return kernels;
}

}  // namespace taas::nn
