// The runtime's GPU path end to end (label gpu: skipped without a device), through the real
// all-reduce trainer in one process (RunLocalTraining, taas::testing::RunSteps) with
// --device=cuda against --device=cpu. What it adds to models_gpu_test.cc (one step of each layer
// stack): the runtime's device choice, the replica's state in fused buffers on its GPU, the
// update applied there by the CUDA engine's rules, batches on the replica's device, with two
// GPUs one replica per GPU over NCCL, and what a step copies to the host.
//
// Tolerances for the MLP on one fixed batch (SGD, five steps, same seed): every step's loss
// within 1e-3 of the CPU's, relative, and every final variable element within 1e-3 of the CPU's
// variable's largest magnitude (gradients agree to about 1e-5 relative; five SGD updates cannot
// take them further apart than that).
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <random>

#include "taas/cuda/memory.h"
#include "taas/cuda/testing.h"
#include "taas/fashion_mnist/models.h"
#include "taas/testing/testing.h"

namespace taas::fashion_mnist {
namespace {

// A Fashion-MNIST model on one fixed batch put on the replica's device (TrainerInfo::device),
// trained as the example trainer does it: the loss's statistics stay on the device
// (Model::Step, StepResult::device_loss). `at_train`, when set, runs as the first replica's every
// train() starts.
class FixedBatchOnDevice : public DistModel {
 public:
  explicit FixedBatchOnDevice(std::string model, std::function<void()> at_train = {})
      : model_name_(std::move(model)), at_train_(std::move(at_train)) {}

  absl::Status build_model(ModelBuilder& builder) override {
    TAAS_ASSIGN_OR_RETURN(model_, CreateModel(model_name_, 1));
    builder.AddVariables(model_->variables());
    builder.SetOptimizer(model_->DefaultOptimizer(/*steps_per_epoch=*/100));
    const std::int64_t n = 32 / builder.info().replicas_per_worker;
    Shape shape = {n};
    for (std::int64_t d : model_->example_shape()) shape.push_back(d);
    Tensor images(shape);
    std::mt19937 rng(7 + static_cast<unsigned>(builder.info().replica_in_worker));
    std::uniform_real_distribution<float> pixel(0.0f, 1.0f);
    for (float& x : images.values()) x = pixel(rng);
    batch_.images = images.To(builder.info().device);
    for (std::int64_t i = 0; i < n; ++i) batch_.labels.push_back(static_cast<int>(i % kClasses));
    builder.SetBatchSize(n);
    first_replica_ = builder.info().replica_in_worker == 0;
    return absl::OkStatus();
  }
  StepResult train(Session&) override {
    if (at_train_ && first_replica_) at_train_();
    StepResult result;
    auto stats = model_->Step(batch_);
    if (!stats.ok()) {
      result.error = stats.status();
      return result;
    }
    result.examples = batch_.images.shape()[0];
    result.device_loss = (*stats)->Slice(nn::kLossMean, {1});
    return result;
  }

 private:
  std::string model_name_;
  std::function<void()> at_train_;
  bool first_replica_ = false;
  std::unique_ptr<Model> model_;
  data::Batch batch_;
};

absl::StatusOr<testing::RunStepsResult> Run(std::vector<std::string> flags) {
  testing::RunStepsOptions options;
  options.flags = std::move(flags);
  return testing::RunSteps([] { return std::unique_ptr<DistModel>(new FixedBatchOnDevice("mlp")); },
                           5, options);
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
  if (cuda::VisibleGpus() < 2) return;  // one GPU: nothing to compare
  auto cpu = Run({"--device=cpu", "--replicas_per_worker=2"});
  REQUIRE_MESSAGE(cpu.ok(), cpu.status().ToString());
  auto gpu = Run({"--device=cuda", "--replicas_per_worker=2"});
  REQUIRE_MESSAGE(gpu.ok(), gpu.status().ToString());
  ExpectSame(*cpu, *gpu);
}

TEST_CASE("between steps on one GPU only the loss, every log_steps, is copied to the host") {
  // What the CUDA memory copied to the host (every copy through the DeviceMemory seam, which is
  // how the runtime reaches a device) when each train() started.
  std::vector<std::size_t> bytes_at_train, copies_at_train;
  const auto record = [&] {
    // On the trainer's thread, inside train(): CHECK, not REQUIRE, which would throw there.
    const absl::StatusOr<cuda::MemoryStats> stats = cuda::StatsOf(0);
    CHECK_MESSAGE(stats.ok(), stats.status().ToString());
    bytes_at_train.push_back(stats.value_or(cuda::MemoryStats{}).to_host_bytes);
    copies_at_train.push_back(stats.value_or(cuda::MemoryStats{}).to_host_copies);
  };
  char pattern[] = "/tmp/taas-cnn-gpu-XXXXXX";
  const std::filesystem::path dir = ::mkdtemp(pattern);
  const std::vector<std::string> flags = {"--device=cuda",
                                          "--replicas_per_worker=1",
                                          "--max_steps=7",
                                          "--log_steps=2",
                                          "--save_summaries_steps=0",
                                          "--save_checkpoints_secs=0",
                                          "--check_variables_steps=0",
                                          "--model_dir=" + (dir / "model").string()};
  std::unique_ptr<std::FILE, int (*)(std::FILE*)> log(std::tmpfile(), &std::fclose);
  const int code = RunLocalTraining(
      flags, [&] { return std::make_unique<FixedBatchOnDevice>("cnn", record); }, log.get());
  std::filesystem::remove_all(dir);
  if (code != 0) {
    std::rewind(log.get());
    char line[4096];
    while (std::fgets(line, sizeof(line), log.get()) != nullptr) MESSAGE(line);
  }
  REQUIRE(code == 0);
  REQUIRE(bytes_at_train.size() == 7);
  // Between train() k and k + 1: the loss (one float, one copy) after the steps that log (2, 4
  // and 6), nothing else: no variable, gradient, optimizer slot or statistic.
  for (std::size_t k = 1; k < bytes_at_train.size(); ++k) {
    CAPTURE(k);
    CHECK(bytes_at_train[k] - bytes_at_train[k - 1] == (k % 2 == 0 ? sizeof(float) : 0));
    CHECK(copies_at_train[k] - copies_at_train[k - 1] == (k % 2 == 0 ? 1 : 0));
  }
}

}  // namespace
}  // namespace taas::fashion_mnist
