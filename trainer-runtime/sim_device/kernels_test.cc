// The layers, the loss, the regularizers and the update rules on the simulated device, against the
// CPU engine: the same bits, with nothing copied to the host during a training step.
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "layer_testing.h"
#include "taas/nn/layers.h"
#include "taas/nn/sequential.h"
#include "taas/optim/optimizer.h"
#include "taas/sim_device/sim_device.h"

namespace taas::sim {
namespace {

constexpr Device kSim0{DeviceType::kSimulated, 0};

// A small network with every layer kind: conv (ReLU) -> pool -> conv (L2) -> flatten -> dense
// (ReLU, L2) -> dropout -> dense -> relu.
void Build(nn::Sequential& network, nn::ComputeContext& context) {
  using nn::Activation;
  network.Add(
      std::make_unique<nn::Conv2D>(context, nn::Conv2DOptions{.name = "conv1",
                                                              .in_channels = 2,
                                                              .filters = 4,
                                                              .kernel_size = 3,
                                                              .activation = Activation::kRelu}));
  network.Add(std::make_unique<nn::MaxPool2D>(context, nn::MaxPool2DOptions{.name = "pool1"}));
  network.Add(std::make_unique<nn::Conv2D>(
      context, nn::Conv2DOptions{.name = "conv2",
                                 .in_channels = 4,
                                 .filters = 3,
                                 .kernel_size = 3,
                                 .strides = 2,
                                 .padding = nn::Padding::kSame,
                                 .kernel_regularizer = nn::regularizers::L2(0.01f)}));
  network.Add(std::make_unique<nn::Flatten>("flatten"));
  network.Add(std::make_unique<nn::Dense>(
      nn::DenseOptions{.name = "dense1",
                       .inputs = 2 * 2 * 3,
                       .units = 8,
                       .activation = Activation::kRelu,
                       .kernel_regularizer = nn::regularizers::L2(0.02f)}));
  network.Add(
      std::make_unique<nn::Dropout>(nn::DropoutOptions{.name = "drop", .rate = 0.25f, .seed = 3}));
  network.Add(
      std::make_unique<nn::Dense>(nn::DenseOptions{.name = "logits", .inputs = 8, .units = 5}));
  network.Add(std::make_unique<nn::ReLU>("relu"));
}

void MoveTo(nn::Sequential& network, Device device) {
  for (Variable* variable : network.variables()) {
    variable->value = variable->value.To(device);
    variable->gradient = variable->gradient.To(device);
  }
}

std::vector<float> OnHost(const Tensor& tensor) {
  const Tensor host = tensor.To(Device::Cpu());
  return {host.values().begin(), host.values().end()};
}

bool SameBits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

// One training step: forward, loss with the regularizers, backward; the loss's statistics.
const Tensor& TrainStep(nn::Sequential& network, nn::SoftmaxCrossEntropy& loss, const Tensor& x,
                        const std::vector<std::int32_t>& labels) {
  const Tensor& logits = nn::testing::Ok(network.Forward(x, true));
  auto stats = loss.Compute(logits, labels);
  REQUIRE(stats.ok());
  REQUIRE(network.AddRegularizationLoss(**stats).ok());
  REQUIRE(network.Backward(loss.Backward()).ok());
  return **stats;
}

TEST_CASE("a training step on the simulated device is the CPU engine's, bit for bit") {
  SimulatedDevices devices;
  nn::ComputeContext host_context, device_context;
  nn::Sequential on_host, on_device;
  Build(on_host, host_context);
  Build(on_device, device_context);
  MoveTo(on_device, kSim0);
  const Tensor x = nn::testing::Random({3, 9, 9, 2}, 7);
  const Tensor x_device = x.To(kSim0);
  const std::vector<std::int32_t> labels = {1, 4, 0};
  nn::SoftmaxCrossEntropy host_loss, device_loss;

  // Twice: the second step reuses every layer's state and buffers.
  for (int step = 0; step < 2; ++step) {
    CAPTURE(step);
    devices.memory().ResetTraffic();
    const Tensor& host_stats = TrainStep(on_host, host_loss, x, labels);
    const Tensor& device_stats = TrainStep(on_device, device_loss, x_device, labels);
    CHECK(devices.traffic().to_host == CopyCount{});
    CHECK(devices.traffic().to_device == CopyCount{});
    CHECK(SameBits(OnHost(host_stats), OnHost(device_stats)));
    const auto host_variables = on_host.variables(), device_variables = on_device.variables();
    for (std::size_t v = 0; v < host_variables.size(); ++v) {
      CAPTURE(host_variables[v]->name);
      CHECK(device_variables[v]->gradient.device() == kSim0);
      CHECK(SameBits(OnHost(host_variables[v]->gradient), OnHost(device_variables[v]->gradient)));
    }
  }
}

TEST_CASE("the update rules on the simulated device are the host's, bit for bit") {
  SimulatedDevices devices;
  for (const char* name : {"sgd", "momentum", "adam", "adamw", "rmsprop", "adagrad"}) {
    CAPTURE(name);
    optim::OptimizerConfig config;
    config.name = name;
    config.learning_rate = optim::LearningRateSchedule::Constant(0.1f);
    config.weight_decay = 0.01f;
    if (config.name == "rmsprop") {
      config.momentum = 0.5f;
      config.centered = true;
    }
    auto optimizer = optim::CreateOptimizer(config);
    REQUIRE(optimizer.ok());
    Tensor var = nn::testing::Random({37}, 1), grad = nn::testing::Random({37}, 2);
    Tensor var_device = var.To(kSim0), grad_device = grad.To(kSim0);
    std::vector<Tensor> slots, device_slots;
    for (int k = 0; k < (*optimizer)->slot_count(); ++k) {
      slots.emplace_back(Shape{37});
      device_slots.emplace_back(Shape{37}, kSim0);
    }
    std::vector<Tensor*> slot_pointers, device_slot_pointers;
    for (auto& slot : slots) slot_pointers.push_back(&slot);
    for (auto& slot : device_slots) device_slot_pointers.push_back(&slot);
    for (std::int64_t step = 0; step < 3; ++step) {
      REQUIRE((*optimizer)->ApplyTensors("w", var, grad, slot_pointers, step).ok());
      REQUIRE((*optimizer)
                  ->ApplyTensors("w", var_device, grad_device, device_slot_pointers, step)
                  .ok());
    }
    CHECK(SameBits(OnHost(var), OnHost(var_device)));
    for (std::size_t k = 0; k < slots.size(); ++k) {
      CHECK(SameBits(OnHost(slots[k]), OnHost(device_slots[k])));
    }
  }
}

TEST_CASE("clipping by global norm on the simulated device copies nothing to the host") {
  SimulatedDevices devices;
  optim::OptimizerConfig config;
  config.global_clipnorm = 0.5f;
  auto optimizer = optim::CreateOptimizer(config);
  REQUIRE(optimizer.ok());
  Tensor a = nn::testing::Random({37}, 3), b = nn::testing::Random({5}, 4);
  Tensor a_device = a.To(kSim0), b_device = b.To(kSim0);
  std::vector<Tensor*> on_host = {&a, &b}, on_device = {&a_device, &b_device};
  devices.memory().ResetTraffic();
  REQUIRE((*optimizer)->ClipByGlobalNorm(on_device).ok());
  // The norm is computed and applied on the device: not even the norm comes to the host.
  CHECK(devices.traffic().to_host == CopyCount{});
  CHECK(devices.traffic().to_device == CopyCount{});
  REQUIRE((*optimizer)->ClipByGlobalNorm(on_host).ok());
  CHECK(SameBits(OnHost(a), OnHost(a_device)));
  CHECK(SameBits(OnHost(b), OnHost(b_device)));
  double sum = 0.0;
  for (const Tensor* t : on_host) {
    for (float x : t->values()) sum += static_cast<double>(x) * x;
  }
  CHECK(std::sqrt(sum) == doctest::Approx(0.5));
}

}  // namespace
}  // namespace taas::sim
