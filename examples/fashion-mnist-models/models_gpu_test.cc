// One full training step of each Fashion-MNIST model on CUDA against the CPU engine: the same
// seed (so the same initial variables), the same batch, then the model's own optimizer applied on
// each device. Tolerances, relative to the largest magnitude of the CPU's result:
// - the loss 1e-5, every gradient 1e-3 (float32 sums in another order through up to seven layers,
//   ReLU masks included: an activation within rounding of 0 can flip its unit's mask);
// - the variables after the update 1e-5 for the MLP's SGD; for the CNN's Adam, whose first update
// is
//   +-lr wherever |gradient| >> epsilon, within 2 lr (a gradient that is 0 up to rounding may take
//   either sign) and on all but 1% of the elements within 1e-5.
#include <doctest/doctest.h>

#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "taas/fashion_mnist/models.h"
#include "taas/nn_cuda/testing.h"

namespace taas::fashion_mnist {
namespace {

using nn::cuda::testing::ExpectClose;
using nn::cuda::testing::kCuda0;

data::Batch RandomBatch(const Shape& example_shape, std::int64_t n, std::uint64_t seed) {
  Shape shape = {n};
  shape.insert(shape.end(), example_shape.begin(), example_shape.end());
  data::Batch batch{Tensor(shape), std::vector<std::int32_t>(static_cast<std::size_t>(n))};
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> pixel(0.0f, 1.0f);
  for (float& v : batch.images.values()) v = pixel(rng);
  for (auto& label : batch.labels) label = static_cast<std::int32_t>(rng() % kClasses);
  return batch;
}

void CompareStep(const std::string& name) {
  INFO(name);
  auto cpu = CreateModel(name, 3);
  auto cuda = CreateModel(name, 3);
  REQUIRE(cpu.ok());
  REQUIRE(cuda.ok());
  nn::cuda::testing::MoveTo((*cuda)->variables(), kCuda0);
  const data::Batch batch = RandomBatch((*cpu)->example_shape(), 32, 7);
  const data::Batch cuda_batch{batch.images.To(kCuda0), batch.labels};

  auto expected = (*cpu)->TrainStep(batch);
  auto actual = (*cuda)->TrainStep(cuda_batch);
  REQUIRE_MESSAGE(expected.ok(), expected.status().message());
  REQUIRE_MESSAGE(actual.ok(), actual.status().message());
  CHECK(actual->loss == doctest::Approx(expected->loss).epsilon(1e-5));
  CHECK(actual->correct == expected->correct);
  const auto variables = (*cpu)->variables(), cuda_variables = (*cuda)->variables();
  for (std::size_t i = 0; i < variables.size(); ++i) {
    ExpectClose(cuda_variables[i]->gradient, variables[i]->gradient, 1e-3,
                variables[i]->name + " gradient");
  }

  const optim::OptimizerConfig config = (*cpu)->DefaultOptimizer(100);
  auto optimizer = optim::CreateOptimizer(config);
  REQUIRE(optimizer.ok());
  const float lr = (*optimizer)->LearningRate(0);
  for (std::size_t i = 0; i < variables.size(); ++i) {
    std::vector<Tensor> slots, cuda_slots;
    std::vector<Tensor*> slot_pointers, cuda_slot_pointers;
    for (int s = 0; s < (*optimizer)->slot_count(); ++s) {
      slots.emplace_back(variables[i]->value.shape());
      cuda_slots.emplace_back(variables[i]->value.shape(), kCuda0);
    }
    for (std::size_t s = 0; s < slots.size(); ++s) {
      slot_pointers.push_back(&slots[s]);
      cuda_slot_pointers.push_back(&cuda_slots[s]);
    }
    Variable& v = *variables[i];
    Variable& w = *cuda_variables[i];
    REQUIRE((*optimizer)->ApplyTensors(v.name, v.value, v.gradient, slot_pointers, 0).ok());
    REQUIRE((*optimizer)->ApplyTensors(w.name, w.value, w.gradient, cuda_slot_pointers, 0).ok());
    if (config.name != "adam") {
      ExpectClose(w.value, v.value, 1e-4, v.name + " after the update");
      continue;
    }
    const Tensor host = w.value.To(Device::Cpu());
    std::int64_t apart = 0;
    for (std::int64_t e = 0; e < host.size(); ++e) {
      const double difference = std::fabs(host.values()[e] - v.value.values()[e]);
      CHECK(difference <= 2.0 * lr + 1e-6);
      if (difference > 1e-5) ++apart;
    }
    CHECK_MESSAGE(apart * 100 <= host.size(), v.name << ": " << apart << " elements apart");
  }
}

TEST_CASE("one training step of the MLP on CUDA matches the CPU") { CompareStep("mlp"); }

TEST_CASE("one training step of the CNN on CUDA matches the CPU") { CompareStep("cnn"); }

}  // namespace
}  // namespace taas::fashion_mnist
