// The runtime's GPU path end to end (label gpu: skipped without a device): the MLP trained for a
// few steps through taas::testing::RunSteps (the real all-reduce trainer in one process) on
// --device=cuda against --device=cpu. What it adds to models_gpu_test.cc (one step of each layer
// stack): the runtime's device choice, its variable placement (values to the GPU before train(),
// gradients back, the update on the host mirrors), batches on the replica's device, and with two
// GPUs one replica per GPU. Same seed, same fixed batch. Tolerances (SGD, five steps): every
// step's loss within 1e-3 of the CPU's, relative, and every final variable element within 1e-3
// of the CPU's variable's largest magnitude (gradients agree to about 1e-5 relative; five SGD
// updates cannot take them further apart than that).
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <random>

#include "taas/cuda/device.h"
#include "taas/fashion_mnist/models.h"
#include "taas/testing/testing.h"

namespace taas::fashion_mnist {
namespace {

// The MLP on one fixed batch, put on the replica's device (TrainerInfo::device).
class FixedBatchOnDevice : public DistModel {
 public:
  absl::Status build_model(ModelBuilder& builder) override {
    TAAS_ASSIGN_OR_RETURN(model_, CreateModel("mlp", 1));
    builder.AddVariables(model_->variables());
    builder.SetOptimizer(model_->DefaultOptimizer(/*steps_per_epoch=*/100));
    const std::int64_t n = 32 / builder.info().replicas_per_worker;
    Tensor images({n, 784});
    std::mt19937 rng(7 + static_cast<unsigned>(builder.info().replica_in_worker));
    std::uniform_real_distribution<float> pixel(0.0f, 1.0f);
    for (float& x : images.values()) x = pixel(rng);
    batch_.images = images.To(builder.info().device);
    for (std::int64_t i = 0; i < n; ++i) batch_.labels.push_back(static_cast<int>(i % kClasses));
    builder.SetBatchSize(n);
    return absl::OkStatus();
  }
  StepResult train(Session&) override {
    StepResult result;
    auto stats = model_->TrainStep(batch_);
    if (!stats.ok()) {
      result.error = stats.status();
      return result;
    }
    result.loss = stats->loss;
    return result;
  }

 private:
  std::unique_ptr<Model> model_;
  data::Batch batch_;
};

ModelFactory Factory() {
  return [] { return std::unique_ptr<DistModel>(new FixedBatchOnDevice()); };
}

absl::StatusOr<testing::RunStepsResult> Run(std::vector<std::string> flags) {
  testing::RunStepsOptions options;
  options.flags = std::move(flags);
  return testing::RunSteps(Factory(), 5, options);
}

void ExpectSame(const testing::RunStepsResult& cpu, const testing::RunStepsResult& gpu) {
  REQUIRE(cpu.losses.size() == gpu.losses.size());
  for (std::size_t s = 0; s < cpu.losses.size(); ++s) {
    CAPTURE(s);
    CHECK(std::abs(gpu.losses[s] - cpu.losses[s]) <= 1e-3f * std::abs(cpu.losses[s]));
  }
  for (const auto& [name, values] : cpu.variables) {
    CAPTURE(name);
    const auto& other = gpu.variables.at(name);
    REQUIRE(other.size() == values.size());
    float largest = 0.0f, worst = 0.0f;
    for (std::size_t i = 0; i < values.size(); ++i) {
      largest = std::max(largest, std::abs(values[i]));
      worst = std::max(worst, std::abs(values[i] - other[i]));
    }
    CHECK(worst <= 1e-3f * largest);
  }
}

TEST_CASE("five steps of the MLP on cuda:0 through the runtime match the CPU") {
  auto cpu = Run({"--device=cpu"});
  REQUIRE_MESSAGE(cpu.ok(), cpu.status().ToString());
  auto gpu = Run({"--device=cuda", "--replicas_per_worker=1"});
  REQUIRE_MESSAGE(gpu.ok(), gpu.status().ToString());
  CHECK(gpu->losses.back() < gpu->losses.front());
  ExpectSame(*cpu, *gpu);
}

TEST_CASE("two replicas on two GPUs match two replicas on the CPU") {
  if (cuda::VisibleDeviceCount() < 2) return;  // one GPU: nothing to compare
  auto cpu = Run({"--device=cpu", "--replicas_per_worker=2"});
  REQUIRE_MESSAGE(cpu.ok(), cpu.status().ToString());
  auto gpu = Run({"--device=cuda", "--replicas_per_worker=2"});
  REQUIRE_MESSAGE(gpu.ok(), gpu.status().ToString());
  ExpectSame(*cpu, *gpu);
}

}  // namespace
}  // namespace taas::fashion_mnist
