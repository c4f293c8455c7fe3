// Each layer, the loss, L2 and each update rule on CUDA against the CPU engine (oneDNN), on the
// same inputs and variables. Tolerances, relative to the largest magnitude of the CPU's result:
// - 1e-4 for products (Dense, Conv2D and their gradients): cuBLAS, cuDNN and oneDNN add the
//   same float32 terms in different orders (up to ~5000 terms in a kernel gradient here);
// - 1e-6 for element-wise results, pooling, the loss and the update rules (one rounding or an
//   FMA contraction apart; max pooling picks the same element, so it is exact).
#include "taas/nn_cuda/engine.h"

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "layer_testing.h"
#include "taas/cuda/stream.h"
#include "taas/nn/layers.h"
#include "taas/nn_cuda/conv_algorithms.h"
#include "taas/nn_cuda/testing.h"
#include "taas/optim/optimizer.h"

namespace taas::nn {
namespace {

constexpr double kProductTolerance = 1e-4;
constexpr double kElementTolerance = 1e-6;

using cuda::testing::ExpectClose;
using cuda::testing::kCuda0;
using cuda::testing::MoveTo;
using testing::Ok;
using testing::Random;

// Runs `cpu` and `cuda` (built alike, so with the same variables) forward and backward on the
// same random input and output gradient and compares every result.
void CompareLayer(Layer& cpu, Layer& cuda, const Shape& input_shape, double tolerance,
                  std::uint64_t seed) {
  MoveTo(cuda.variables(), kCuda0);
  const Tensor x = Random(input_shape, seed);
  const Tensor x_cuda = x.To(kCuda0);
  const Tensor& y = Ok(cpu.Forward(x, true));
  const Tensor& y_cuda = Ok(cuda.Forward(x_cuda, true));
  ExpectClose(y_cuda, y, tolerance, cpu.name() + " output");
  const Tensor dy = Random(y.shape(), seed + 1);
  const Tensor& dx = Ok(cpu.Backward(dy));
  const Tensor& dx_cuda = Ok(cuda.Backward(dy.To(kCuda0)));
  ExpectClose(dx_cuda, dx, tolerance, cpu.name() + " input gradient");
  const auto variables = cpu.variables(), cuda_variables = cuda.variables();
  for (std::size_t i = 0; i < variables.size(); ++i) {
    ExpectClose(cuda_variables[i]->gradient, variables[i]->gradient, tolerance,
                variables[i]->name + " gradient");
  }
}

TEST_CASE("the CUDA engine is registered by linking it") {
  CHECK(KernelsFor(DeviceType::kCuda) == &cuda::Kernels());
  CHECK(optim::UpdateRulesFor(DeviceType::kCuda) == &cuda::UpdateRules());
}

TEST_CASE("dense on CUDA matches the CPU, with and without ReLU") {
  for (Activation activation : {Activation::kNone, Activation::kRelu}) {
    const DenseOptions options{
        .name = "dense", .inputs = 70, .units = 23, .activation = activation};
    Dense cpu(options), cuda(options);
    cpu.bias().value = Random({23}, 7);
    cuda.bias().value = cpu.bias().value;
    CompareLayer(cpu, cuda, {33, 70}, kProductTolerance, 1);
  }
}

TEST_CASE("conv2d on CUDA matches the CPU: valid, same and strided, kernels in TF's HWIO") {
  ComputeContext context;
  struct Case {
    std::int64_t kernel_size, strides;
    Padding padding;
    Shape input;
  };
  for (const Case& c :
       {Case{3, 1, Padding::kValid, {5, 12, 11, 3}}, Case{3, 1, Padding::kSame, {4, 9, 10, 3}},
        Case{3, 2, Padding::kValid, {3, 13, 11, 3}}, Case{1, 1, Padding::kValid, {2, 5, 5, 3}}}) {
    const Conv2DOptions options{.name = "conv",
                                .in_channels = 3,
                                .filters = 8,
                                .kernel_size = c.kernel_size,
                                .strides = c.strides,
                                .padding = c.padding,
                                .activation = Activation::kRelu};
    Conv2D cpu(context, options), cuda(context, options);
    cpu.bias().value = Random({8}, 3);
    cuda.bias().value = cpu.bias().value;
    CompareLayer(cpu, cuda, c.input, kProductTolerance, 11);
  }
}

TEST_CASE("conv2d on CUDA refuses TF's asymmetric SAME padding, naming the layer") {
  ComputeContext context;
  Conv2D conv(context, Conv2DOptions{.name = "conv1",
                                     .in_channels = 1,
                                     .filters = 2,
                                     .kernel_size = 3,
                                     .strides = 2,
                                     .padding = Padding::kSame});
  MoveTo(conv.variables(), kCuda0);
  auto result = conv.Forward(Tensor({1, 6, 6, 1}, kCuda0), true);  // pads 0 + 1
  CHECK(result.status().code() == absl::StatusCode::kUnimplemented);
  CHECK(std::string(result.status().message()).starts_with("conv1: cuda:0: padding 0+1 x 0+1"));
}

TEST_CASE("max pooling on CUDA picks the CPU's elements") {
  ComputeContext context;
  for (const auto& [pool_size, strides] : {std::pair<std::int64_t, std::int64_t>{2, 2}, {3, 2}}) {
    const MaxPool2DOptions options{.name = "pool", .pool_size = pool_size, .strides = strides};
    MaxPool2D cpu(context, options), cuda(context, options);
    CompareLayer(cpu, cuda, {4, 9, 8, 6}, kElementTolerance, 21);
  }
}

TEST_CASE("relu and flatten on CUDA match the CPU") {
  ReLU cpu_relu("relu"), cuda_relu("relu");
  CompareLayer(cpu_relu, cuda_relu, {7, 5, 3}, kElementTolerance, 31);
  Flatten cpu_flatten("flatten"), cuda_flatten("flatten");
  CompareLayer(cpu_flatten, cuda_flatten, {7, 5, 3, 2}, kElementTolerance, 33);
}

TEST_CASE("dropout on CUDA drops about `rate` of the elements, repeatably, and scales the rest") {
  const Tensor x = Random({64, 257}, 41).To(kCuda0);
  Dropout first(DropoutOptions{.name = "dropout", .rate = 0.3f, .seed = 5});
  Dropout second(DropoutOptions{.name = "dropout", .rate = 0.3f, .seed = 5});
  const Tensor y = Ok(first.Forward(x, true)).To(Device::Cpu());
  const Tensor again = Ok(second.Forward(x, true)).To(Device::Cpu());
  const Tensor host_x = x.To(Device::Cpu());
  std::int64_t dropped = 0;
  for (std::int64_t i = 0; i < y.size(); ++i) {
    CHECK(y.values()[i] == again.values()[i]);
    if (y.values()[i] == 0.0f) {
      ++dropped;
    } else {
      CHECK(y.values()[i] == doctest::Approx(host_x.values()[i] / 0.7f));
    }
  }
  const double fraction = static_cast<double>(dropped) / static_cast<double>(y.size());
  CHECK(fraction == doctest::Approx(0.3).epsilon(0.1));  // 16448 draws: 0.3 +- 0.011 at 3 sigma
  // The gradient goes through the same mask: with dy = x, dx is y.
  const Tensor dx = Ok(first.Backward(x)).To(Device::Cpu());
  CHECK(std::equal(dx.values().begin(), dx.values().end(), y.values().begin()));
  const Tensor identity = Ok(first.Forward(x, false)).To(Device::Cpu());
  CHECK(std::equal(identity.values().begin(), identity.values().end(), host_x.values().begin()));
}

TEST_CASE("softmax cross-entropy on CUDA matches the CPU's loss, hits, statistics and gradient") {
  const Tensor logits = Random({37, 10}, 51, 4.0f);
  std::mt19937 rng(52);
  std::vector<std::int32_t> labels(37);
  for (auto& label : labels) label = static_cast<std::int32_t>(rng() % 10);
  SoftmaxCrossEntropy cpu, cuda;
  auto expected = cpu.Forward(logits, labels);
  auto actual = cuda.Forward(logits.To(kCuda0), labels);
  REQUIRE(expected.ok());
  REQUIRE(actual.ok());
  CHECK(actual->loss == doctest::Approx(expected->loss).epsilon(kElementTolerance));
  CHECK(actual->correct == expected->correct);
  ExpectClose(cuda.Backward(), cpu.Backward(), kElementTolerance, "loss gradient");
  // Compute leaves the loss's statistics on the device.
  auto expected_stats = cpu.Compute(logits, labels);
  auto actual_stats = cuda.Compute(logits.To(kCuda0), labels);
  REQUIRE(expected_stats.ok());
  REQUIRE(actual_stats.ok());
  CHECK((*actual_stats)->device() == kCuda0);
  ExpectClose(**actual_stats, **expected_stats, kElementTolerance, "loss statistics");
  labels[3] = 10;
  CHECK(cuda.Forward(logits.To(kCuda0), labels).status().code() ==
        absl::StatusCode::kInvalidArgument);
}

TEST_CASE("sums of squares accumulate on the device as on the CPU") {
  const Tensor x = Random({301, 7}, 63);
  Tensor cpu_total({1}), cuda_total = Tensor({1}).To(kCuda0);
  for (float scale : {0.5f, 0.01f}) {
    REQUIRE(KernelsFor(DeviceType::kCpu)->AddSumOfSquares(x, scale, cpu_total).ok());
    REQUIRE(KernelsFor(DeviceType::kCuda)->AddSumOfSquares(x.To(kCuda0), scale, cuda_total).ok());
  }
  ExpectClose(cuda_total, cpu_total, kElementTolerance, "sum of squares");
}

// cuDNN's descriptors of a 3x3 convolution of 2x9x9x4 into 6 filters (NHWC), freed with it.
struct SmallConvolution {
  SmallConvolution() {
    REQUIRE(cudnnCreateTensorDescriptor(&d.x) == CUDNN_STATUS_SUCCESS);
    REQUIRE(cudnnCreateTensorDescriptor(&d.y) == CUDNN_STATUS_SUCCESS);
    REQUIRE(cudnnCreateFilterDescriptor(&d.w) == CUDNN_STATUS_SUCCESS);
    REQUIRE(cudnnCreateConvolutionDescriptor(&d.conv) == CUDNN_STATUS_SUCCESS);
    REQUIRE(cudnnSetTensor4dDescriptor(d.x, CUDNN_TENSOR_NHWC, CUDNN_DATA_FLOAT, 2, 4, 9, 9) ==
            CUDNN_STATUS_SUCCESS);
    REQUIRE(cudnnSetTensor4dDescriptor(d.y, CUDNN_TENSOR_NHWC, CUDNN_DATA_FLOAT, 2, 6, 7, 7) ==
            CUDNN_STATUS_SUCCESS);
    REQUIRE(cudnnSetFilter4dDescriptor(d.w, CUDNN_DATA_FLOAT, CUDNN_TENSOR_NHWC, 6, 4, 3, 3) ==
            CUDNN_STATUS_SUCCESS);
    REQUIRE(cudnnSetConvolution2dDescriptor(d.conv, 0, 0, 1, 1, 1, 1, CUDNN_CROSS_CORRELATION,
                                            CUDNN_DATA_FLOAT) == CUDNN_STATUS_SUCCESS);
    REQUIRE(cudnnCreate(&handle) == CUDNN_STATUS_SUCCESS);
    REQUIRE(cudnnSetStream(handle, taas::cuda::ComputeStream(0).value()) == CUDNN_STATUS_SUCCESS);
  }
  ~SmallConvolution() {
    cudnnDestroy(handle);
    cudnnDestroyConvolutionDescriptor(d.conv);
    cudnnDestroyFilterDescriptor(d.w);
    cudnnDestroyTensorDescriptor(d.y);
    cudnnDestroyTensorDescriptor(d.x);
  }
  cuda::ConvDescriptors d;
  cudnnHandle_t handle = nullptr;
};

TEST_CASE("an algorithm cuDNN refuses to run falls back to the next, run with that one's math") {
  SmallConvolution conv;
  auto ranked = cuda::RankConvAlgorithms(conv.handle, cuda::ConvDirection::kForward, conv.d);
  REQUIRE(ranked.ok());
  REQUIRE_FALSE(ranked->empty());
  // An algorithm no cuDNN has, ranked first with tensor-op math: refused, so the next runs.
  ranked->insert(ranked->begin(), cuda::ConvAlgorithm{.algo = CUDNN_CONVOLUTION_FWD_ALGO_COUNT,
                                                      .math = CUDNN_TENSOR_OP_MATH});
  const Tensor x = Random({2, 9, 9, 4}, 81).To(kCuda0);
  const Tensor w = Random({6, 3, 3, 4}, 82).To(kCuda0);
  Tensor y({2, 7, 7, 6}, kCuda0);
  const float one = 1.0f, zero = 0.0f;
  std::vector<int> tried;
  std::size_t chosen = 0;
  const auto run = [&](const cuda::ConvAlgorithm& a) {
    tried.push_back(a.algo);
    Tensor workspace({static_cast<std::int64_t>(a.workspace_bytes / 4 + 1)}, kCuda0);
    return cudnnConvolutionForward(conv.handle, &one, conv.d.x, x.data(), conv.d.w, w.data(),
                                   conv.d.conv, static_cast<cudnnConvolutionFwdAlgo_t>(a.algo),
                                   workspace.data(), a.workspace_bytes, &zero, conv.d.y, y.data());
  };
  REQUIRE(cuda::RunRanked(conv.d.conv, *ranked, chosen, "forward", run).ok());
  CHECK(chosen == 1);
  CHECK(tried == std::vector<int>{CUDNN_CONVOLUTION_FWD_ALGO_COUNT, (*ranked)[1].algo});
  cudnnMathType_t math{};
  REQUIRE(cudnnGetConvolutionMathType(conv.d.conv, &math) == CUDNN_STATUS_SUCCESS);
  CHECK(math == (*ranked)[1].math);
  // Later calls start from the one that ran.
  tried.clear();
  REQUIRE(cuda::RunRanked(conv.d.conv, *ranked, chosen, "forward", run).ok());
  CHECK(tried == std::vector<int>{(*ranked)[1].algo});
  // None that runs: an error naming the call, `chosen` left as it was.
  std::size_t none = 0;
  const std::vector<cuda::ConvAlgorithm> bogus = {{.algo = CUDNN_CONVOLUTION_FWD_ALGO_COUNT}};
  const absl::Status refused = cuda::RunRanked(conv.d.conv, bogus, none, "forward", run);
  CHECK(refused.code() == absl::StatusCode::kInternal);
  CHECK(refused.message().find("forward: none of the 1 algorithms") == 0);
  CHECK(none == 0);
}

TEST_CASE("L2 on CUDA matches the CPU") {
  Variable cpu{"w", Random({301, 7}, 61), Random({301, 7}, 62)};
  Variable cuda{"w", cpu.value.To(kCuda0), cpu.gradient.To(kCuda0)};
  auto expected = L2Loss({&cpu}, 0.01f);
  auto actual = L2Loss({&cuda}, 0.01f);
  REQUIRE(actual.ok());
  CHECK(*actual == doctest::Approx(*expected).epsilon(kElementTolerance));
  REQUIRE(AddL2Gradients({&cpu}, 0.01f).ok());
  REQUIRE(AddL2Gradients({&cuda}, 0.01f).ok());
  ExpectClose(cuda.gradient, cpu.gradient, kElementTolerance, "L2 gradient");
}

TEST_CASE("each update rule on CUDA matches the CPU over a few steps") {
  const std::vector<optim::OptimizerConfig> configs = {
      {.name = "sgd",
       .learning_rate = optim::LearningRateSchedule::ExponentialDecay(0.1f, 2, 0.5f)},
      {.name = "momentum", .learning_rate = {}, .momentum = 0.9f},
      {.name = "momentum", .learning_rate = {}, .momentum = 0.9f, .use_nesterov = true},
      {.name = "adam", .learning_rate = optim::LearningRateSchedule::Constant(0.001f)},
      {.name = "adamw",
       .learning_rate = optim::LearningRateSchedule::CosineDecay(0.0f, 10, 0.0f, 0.01f, 2),
       .weight_decay = 0.1f},
      {.name = "rmsprop", .learning_rate = {}},
      {.name = "rmsprop", .learning_rate = {}, .momentum = 0.5f, .centered = true},
      {.name = "adagrad", .learning_rate = optim::LearningRateSchedule::Constant(0.1f)}};
  for (const auto& config : configs) {
    INFO(config.name << (config.use_nesterov ? " (nesterov)" : "")
                     << (config.centered ? " (centered, momentum)" : ""));
    auto optimizer = optim::CreateOptimizer(config);
    REQUIRE(optimizer.ok());
    Tensor var = Random({1031}, 71), var_cuda = var.To(kCuda0);
    std::vector<Tensor> slots, slots_cuda;
    for (int i = 0; i < (*optimizer)->slot_count(); ++i) {
      slots.emplace_back(Shape{1031});
      slots_cuda.emplace_back(Shape{1031}, kCuda0);
    }
    std::vector<Tensor*> slot_pointers, slot_pointers_cuda;
    for (auto& slot : slots) slot_pointers.push_back(&slot);
    for (auto& slot : slots_cuda) slot_pointers_cuda.push_back(&slot);
    for (std::int64_t step = 0; step < 3; ++step) {
      const Tensor grad = Random({1031}, 72 + static_cast<std::uint64_t>(step));
      REQUIRE((*optimizer)->ApplyTensors("w", var, grad, slot_pointers, step).ok());
      REQUIRE((*optimizer)
                  ->ApplyTensors("w", var_cuda, grad.To(kCuda0), slot_pointers_cuda, step)
                  .ok());
    }
    ExpectClose(var_cuda, var, kElementTolerance, "variable");
    for (std::size_t i = 0; i < slots.size(); ++i) {
      ExpectClose(slots_cuda[i], slots[i], kElementTolerance, "slot " + std::to_string(i));
    }
  }
}

TEST_CASE("clipping by global norm on CUDA matches the CPU") {
  auto optimizer = optim::CreateOptimizer({.name = "sgd", .global_clipnorm = 1.5f});
  REQUIRE(optimizer.ok());
  Tensor a = Random({1031}, 81), b = Random({7, 3}, 82);
  Tensor a_cuda = a.To(kCuda0), b_cuda = b.To(kCuda0);
  std::vector<Tensor*> on_cpu = {&a, &b}, on_cuda = {&a_cuda, &b_cuda};
  REQUIRE((*optimizer)->ClipByGlobalNorm(on_cpu).ok());
  REQUIRE((*optimizer)->ClipByGlobalNorm(on_cuda).ok());
  ExpectClose(a_cuda, a, kElementTolerance, "first gradient");
  ExpectClose(b_cuda, b, kElementTolerance, "second gradient");
}

}  // namespace
}  // namespace taas::nn
