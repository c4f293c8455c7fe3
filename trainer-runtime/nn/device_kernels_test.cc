// The device seam: tensors "on sim:0" live in host memory here (a test DeviceMemory registered for
// the test device's type, with kernels that record their calls), so the layers' dispatch, device
// checks and error naming are checked without any device's code. What the layers compute on a
// device is checked against the CPU engine by trainer-runtime/sim_device's tests.
#include "taas/nn/device_kernels.h"

#include <doctest/doctest.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "layer_testing.h"
#include "taas/nn/layers.h"
#include "taas/nn/sequential.h"

namespace taas::nn {
namespace {

constexpr Device kSim0{DeviceType::kSimulated, 0};

// Host memory posing as sim:0's; `full` makes every allocation fail as a full device does.
class TestMemory final : public DeviceMemory {
 public:
  void* Allocate(Device, std::size_t bytes) override {
    if (full) return nullptr;
    return std::calloc(1, bytes);
  }
  void Free(Device, void* memory) override { std::free(memory); }
  void Copy(void* to, Device, const void* from, Device, std::size_t bytes) override {
    std::memcpy(to, from, bytes);
  }
  bool full = false;
};

// Registers a TestMemory for kSimulated for the scope's lifetime, and `kernels` when given.
class TestDevice {
 public:
  explicit TestDevice(DeviceKernels* kernels = nullptr)
      : previous_memory_(RegisterDeviceMemory(DeviceType::kSimulated, &memory_)),
        previous_kernels_(RegisterDeviceKernels(DeviceType::kSimulated, kernels)) {}
  ~TestDevice() {
    RegisterDeviceKernels(DeviceType::kSimulated, previous_kernels_);
    RegisterDeviceMemory(DeviceType::kSimulated, previous_memory_);
  }
  TestMemory& memory() { return memory_; }

 private:
  TestMemory memory_;
  DeviceMemory* previous_memory_;
  DeviceKernels* previous_kernels_;
};

// Records each call; ReLU and the copies compute on the host memory behind the test device, the
// convolution fails as a device library does, everything else succeeds without computing.
class RecordingKernels final : public DeviceKernels {
 public:
  absl::Status DenseForward(const Tensor&, const Tensor&, const Tensor&, bool, Tensor&) override {
    return Record("DenseForward");
  }
  absl::Status DenseBackward(const Tensor&, const Tensor&, const Tensor&, Tensor&, Tensor&,
                             Tensor* dx) override {
    return Record(dx == nullptr ? "DenseBackward" : "DenseBackward+dx");
  }
  absl::Status ConvForward(std::unique_ptr<DeviceState>&, const ConvGeometry& g, const Tensor&,
                           const Tensor&, const Tensor&, bool, Tensor&) override {
    geometry = g;
    calls.push_back("ConvForward");
    return absl::InternalError("cudnnConvolutionForward: CUDNN_STATUS_NOT_SUPPORTED");
  }
  absl::Status ConvBackward(std::unique_ptr<DeviceState>&, const ConvGeometry&, const Tensor&,
                            const Tensor&, const Tensor&, Tensor&, Tensor&, Tensor*) override {
    return Record("ConvBackward");
  }
  absl::Status MaxPoolForward(std::unique_ptr<DeviceState>& state, const PoolGeometry&,
                              const Tensor&, Tensor&) override {
    if (!state) state = std::make_unique<DeviceState>();
    return Record("MaxPoolForward");
  }
  absl::Status MaxPoolBackward(std::unique_ptr<DeviceState>& state, const PoolGeometry&,
                               const Tensor&, const Tensor&, const Tensor&, Tensor&) override {
    // The state the forward pass created comes back.
    return Record(state ? "MaxPoolBackward" : "MaxPoolBackward without state");
  }
  absl::Status Relu(const Tensor& x, Tensor& y) override {
    std::transform(x.data(), x.data() + x.size(), y.data(),
                   [](float v) { return std::max(v, 0.0f); });
    return Record("Relu");
  }
  absl::Status ReluMask(const Tensor& y, const Tensor& dy, Tensor& out) override {
    for (std::int64_t i = 0; i < dy.size(); ++i) {
      out.data()[i] = y.data()[i] > 0.0f ? dy.data()[i] : 0.0f;
    }
    return Record("ReluMask");
  }
  absl::Status Dropout(const Tensor&, float, std::uint64_t, Tensor&, Tensor&) override {
    return Record("Dropout");
  }
  absl::Status Multiply(const Tensor&, const Tensor&, Tensor&) override {
    return Record("Multiply");
  }
  absl::Status Copy(const Tensor& from, Tensor& to) override {
    std::copy_n(from.data(), from.size(), to.data());
    return Record("Copy");
  }
  absl::Status SoftmaxCrossEntropy(const Tensor&, std::span<const std::int32_t> labels, Tensor&,
                                   Tensor& stats) override {
    stats.data()[kLossMean] = 2.0f;
    stats.data()[kLossCorrect] = static_cast<float>(labels.size() - 1);
    return Record("SoftmaxCrossEntropy");
  }
  absl::Status AddSumOfSquares(const Tensor& x, float scale, Tensor& total) override {
    total.data()[0] += scale * static_cast<float>(x.size());
    return Record("AddSumOfSquares");
  }
  absl::Status Axpy(float, const Tensor&, Tensor&) override { return Record("Axpy"); }

  std::vector<std::string> calls;
  ConvGeometry geometry;

 private:
  absl::Status Record(const char* call) {
    calls.emplace_back(call);
    return absl::OkStatus();
  }
};

bool StartsWith(absl::string_view text, std::string_view prefix) {
  return std::string_view(text.data(), text.size()).starts_with(prefix);
}

void MoveTo(Layer& layer, Device device) {
  for (Variable* variable : layer.variables()) {
    variable->value = variable->value.To(device);
    variable->gradient = variable->gradient.To(device);
  }
}

TEST_CASE("a layer whose input is on a device without registered kernels returns an error") {
  TestDevice device;
  Dense dense(DenseOptions{.name = "dense1", .inputs = 3, .units = 2});
  MoveTo(dense, kSim0);
  const Tensor x({4, 3}, kSim0);
  auto result = dense.Forward(x, true);
  REQUIRE_FALSE(result.ok());
  CHECK(result.status().code() == absl::StatusCode::kFailedPrecondition);
  CHECK(StartsWith(
      result.status().message(),
      "dense1: the input is on sim:0 but no kernels are registered for that device type"));
  CHECK(dense.Backward(Tensor({4, 2}, kSim0)).status().code() ==
        absl::StatusCode::kFailedPrecondition);

  ComputeContext context;
  MaxPool2D pool(context, MaxPool2DOptions{.name = "pool1"});
  CHECK(StartsWith(pool.Forward(Tensor({1, 4, 4, 2}, kSim0), true).status().message(),
                   "pool1: the input is on sim:0 but no kernels"));
  ReLU relu("relu");
  CHECK(relu.Forward(x, true).status().code() == absl::StatusCode::kFailedPrecondition);
  Flatten flatten("flatten");
  CHECK(flatten.Forward(x, true).status().code() == absl::StatusCode::kFailedPrecondition);
  Dropout dropout(DropoutOptions{.name = "dropout", .rate = 0.5f});
  CHECK(dropout.Forward(x, true).status().code() == absl::StatusCode::kFailedPrecondition);
  SoftmaxCrossEntropy loss;
  const std::vector<std::int32_t> labels = {0, 1, 2, 0};
  CHECK(StartsWith(loss.Forward(x, labels).status().message(),
                   "softmax_cross_entropy: the input is on sim:0 but no kernels"));
  CHECK(StartsWith(L2Loss(dense.variables(), 0.1f).status().message(),
                   "dense1/kernel: the input is on sim:0 but no kernels"));
}

TEST_CASE("a layer refuses variables on another device than its input, naming the variable") {
  TestDevice device;
  Dense dense(DenseOptions{.name = "dense1", .inputs = 3, .units = 2});
  auto on_device = dense.Forward(Tensor({4, 3}, kSim0), true);
  CHECK(on_device.status().code() == absl::StatusCode::kFailedPrecondition);
  CHECK(on_device.status().message() ==
        "dense1: dense1/kernel is on cpu but the input is on sim:0: place the model's variables "
        "on the device of its input");
  MoveTo(dense, kSim0);
  auto on_host = dense.Forward(Tensor({4, 3}), true);
  CHECK(StartsWith(on_host.status().message(),
                   "dense1: dense1/kernel is on sim:0 but the input "
                   "is on cpu"));
  dense.bias().gradient = Tensor({2});
  CHECK(StartsWith(AddL2Gradients({&dense.bias()}, 0.1f).message(),
                   "dense1/bias: dense1/bias (its gradient) is on cpu but the input is on sim:0"));
}

TEST_CASE("layers run on the registered kernels, outputs and gradients on the input's device") {
  RecordingKernels kernels;
  TestDevice device(&kernels);
  Sequential network;
  auto& hidden = network.Add(std::make_unique<Dense>(
      DenseOptions{.name = "hidden", .inputs = 6, .units = 4, .activation = Activation::kRelu}));
  network.Add(std::make_unique<ReLU>("relu"));
  network.Add(std::make_unique<Dropout>(DropoutOptions{.name = "dropout", .rate = 0.5f}));
  network.Add(std::make_unique<Flatten>("flatten"));
  network.Add(std::make_unique<Dense>(DenseOptions{.name = "logits", .inputs = 4, .units = 3}));
  for (auto& layer : network.layers()) MoveTo(*layer, kSim0);

  const Tensor x = testing::Random({2, 6}, 1).To(kSim0);
  auto logits = network.Forward(x, true);
  REQUIRE(logits.ok());
  CHECK((*logits)->device() == kSim0);
  CHECK((*logits)->shape() == Shape{2, 3});
  SoftmaxCrossEntropy loss;
  const std::vector<std::int32_t> labels = {0, 2};
  auto result = loss.Forward(**logits, labels);
  REQUIRE(result.ok());
  CHECK(result->loss == doctest::Approx(2.0));  // what the kernel wrote
  CHECK(result->correct == 1);
  CHECK(loss.Backward().device() == kSim0);
  REQUIRE(network.Backward(loss.Backward()).ok());
  CHECK(network.variables()[0]->gradient.device() == kSim0);
  auto l2 = L2Loss({&hidden.kernel()}, 0.5f);
  REQUIRE(l2.ok());
  CHECK(*l2 == doctest::Approx(0.5 * 0.5 * 24));
  CHECK(AddL2Gradients({&hidden.kernel()}, 0.5f).ok());
  // The first layer skips its input gradient; the hidden layer's ReLU mask is its own (the
  // standalone ReLU after it does not ask it to skip).
  CHECK(kernels.calls == std::vector<std::string>{
                             "DenseForward", "Relu", "Dropout", "Copy", "DenseForward",
                             "SoftmaxCrossEntropy", "DenseBackward+dx", "Copy", "Multiply",
                             "ReluMask", "ReluMask", "DenseBackward", "AddSumOfSquares", "Axpy"});
}

TEST_CASE("convolution and pooling pass their geometry and state; device errors name the layer") {
  RecordingKernels kernels;
  TestDevice device(&kernels);
  ComputeContext context;
  Conv2D conv(context, Conv2DOptions{.name = "conv1",
                                     .in_channels = 2,
                                     .filters = 3,
                                     .kernel_size = 3,
                                     .strides = 2,
                                     .padding = Padding::kSame});
  MoveTo(conv, kSim0);
  auto failed = conv.Forward(Tensor({1, 6, 5, 2}, kSim0), true);
  CHECK(failed.status().code() == absl::StatusCode::kInternal);
  CHECK(failed.status().message() ==
        "conv1: sim:0: cudnnConvolutionForward: CUDNN_STATUS_NOT_SUPPORTED");
  CHECK(kernels.geometry.out_h == 3);
  CHECK(kernels.geometry.out_w == 3);
  // TF's split, the odd row at the bottom: H pads (3 - 1) * 2 + 3 - 6 = 1 as 0 + 1, W 2 as 1 + 1.
  CHECK(kernels.geometry.pad_top == 0);
  CHECK(kernels.geometry.pad_bottom == 1);
  CHECK(kernels.geometry.pad_left == 1);
  CHECK(kernels.geometry.pad_right == 1);
  CHECK(conv.Backward(Tensor({1, 3, 3, 3}, kSim0)).status().code() ==
        absl::StatusCode::kFailedPrecondition);  // no successful Forward

  MaxPool2D pool(context, MaxPool2DOptions{.name = "pool1"});
  const Tensor x({2, 5, 5, 3}, kSim0);
  auto pooled = pool.Forward(x, true);
  REQUIRE(pooled.ok());
  CHECK((*pooled)->shape() == Shape{2, 2, 2, 3});
  CHECK(pool.Backward(Tensor({2, 2, 2, 3})).status().message() ==
        "pool1: the gradient is on cpu, the output on sim:0");
  auto grad = pool.Backward(Tensor({2, 2, 2, 3}, kSim0));
  REQUIRE(grad.ok());
  CHECK((*grad)->shape() == Shape{2, 5, 5, 3});
  CHECK(kernels.calls.back() == "MaxPoolBackward");

  ChunkedConvPool chunked(
      std::make_unique<Conv2D>(context, Conv2DOptions{.name = "c",
                                                      .in_channels = 3,
                                                      .filters = 1,
                                                      .kernel_size = 1,
                                                      .activation = Activation::kRelu}),
      std::make_unique<MaxPool2D>(context, MaxPool2DOptions{.name = "p"}), 1);
  CHECK(StartsWith(chunked.Forward(x, true).status().message(),
                   "c+p: runs on the host only, the input is on sim:0"));
}

TEST_CASE("a full device is ResourceExhausted naming the layer, not an exception") {
  RecordingKernels kernels;
  TestDevice device(&kernels);
  const Tensor x({2, 3}, kSim0);
  device.memory().full = true;
  ReLU relu("relu1");
  auto result = relu.Forward(x, true);
  CHECK(result.status().code() == absl::StatusCode::kResourceExhausted);
  CHECK(result.status().message() == "relu1: sim:0 is out of memory");
}

}  // namespace
}  // namespace taas::nn
