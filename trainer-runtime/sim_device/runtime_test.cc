// The all-reduce trainer on two simulated devices, as on two GPUs: its state stays on the
// devices (nothing but the loss, every log_steps, comes to the host between steps, and nothing but
// the batch goes there), its results are the CPU path's bit for bit, and checkpoints, summaries,
// warm start and resuming work from device state, the state that is not trained included (a
// running mean the model keeps on its device).
#include <doctest/doctest.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "taas/checkpoint/checkpoint.h"
#include "taas/nn/device_kernels.h"
#include "taas/nn/layers.h"
#include "taas/nn/sequential.h"
#include "taas/optim/optimizer.h"
#include "taas/runtime/local.h"
#include "taas/runtime/warm_start.h"
#include "taas/sim_device/sim_device.h"
#include "taas/summary/event_writer.h"

namespace taas::sim {
namespace {

namespace fs = std::filesystem;

const std::vector<Device> kTwoDevices = {Device{DeviceType::kSimulated, 0},
                                         Device{DeviceType::kSimulated, 1}};
constexpr std::int64_t kBatch = 6;

// What the test sees from inside a run.
struct Observed {
  std::vector<std::int64_t> host_bytes_at_train;    // bytes copied to the host, at each train()
  std::vector<std::int64_t> device_bytes_at_train;  // bytes copied to the devices, at each train()
  std::int64_t device_bytes_at_end = 0;             // and in after_train
  std::map<std::string, std::vector<float>> final_values;
  std::map<std::string, std::vector<float>> final_state;
};

// Two dense layers on synthetic data that depends only on the global step and the replica, with
// its loss and accuracy left on the device, and as state a running mean of each batch's first
// example, kept on the device (BatchNorm's statistics in miniature). Replica 0 records the
// device's traffic at every train() and the final values and state in after_train.
class TinyModel final : public DistModel {
 public:
  TinyModel(SimulatedDevices* devices, Observed* observed, std::string warm_start_from,
            optim::OptimizerConfig optimizer)
      : devices_(devices),
        observed_(observed),
        warm_start_from_(std::move(warm_start_from)),
        optimizer_(std::move(optimizer)) {}

  absl::Status build_model(ModelBuilder& builder) override {
    network_.Add(std::make_unique<nn::Dense>(
        nn::DenseOptions{.name = "hidden",
                         .inputs = 4,
                         .units = 8,
                         .activation = nn::Activation::kRelu,
                         .kernel_regularizer = nn::regularizers::L2(0.01f)}));
    network_.Add(
        std::make_unique<nn::Dense>(nn::DenseOptions{.name = "logits", .inputs = 8, .units = 3}));
    builder.AddVariables(network_.variables());
    running_.value = Tensor({4}, std::vector<float>{0, 0, 0, 0}).To(builder.info().device);
    builder.AddState(&running_);
    builder.SetOptimizer(optimizer_);
    builder.SetBatchSize(kBatch);
    records_ = builder.info().replica_in_worker == 0;
    return absl::OkStatus();
  }

  InitFn get_init_fn() override {
    if (warm_start_from_.empty()) return {};
    return WarmStart({.ckpt_to_initialize_from = warm_start_from_});
  }

  StepResult train(Session& session) override {
    if (records_ && devices_ != nullptr) {
      observed_->host_bytes_at_train.push_back(devices_->traffic().to_host.bytes);
      observed_->device_bytes_at_train.push_back(devices_->traffic().to_device.bytes);
    }
    const Device device = session.info().device;
    std::vector<float> x(kBatch * 4);
    std::vector<std::int32_t> labels(kBatch);
    const auto seed = session.global_step() * 7 + session.info().replica_id_in_sync();
    for (std::int64_t i = 0; i < kBatch; ++i) {
      for (std::int64_t j = 0; j < 4; ++j) {
        x[static_cast<std::size_t>(i * 4 + j)] =
            static_cast<float>((seed * 13 + i * 5 + j * 3) % 17) / 17.0f - 0.5f;
      }
      labels[static_cast<std::size_t>(i)] = static_cast<std::int32_t>((seed + i) % 3);
    }
    input_ = Tensor({kBatch, 4}, x).To(device);
    StepResult result;
    // running = 0.9 running + 0.1 x[0], on the device.
    nn::DeviceKernels* kernels = nn::KernelsFor(device.type);
    result.error = kernels->Axpy(-0.1f, running_.value, running_.value);
    if (result.error.ok()) result.error = kernels->Axpy(0.1f, input_.Slice(0, {4}), running_.value);
    if (!result.error.ok()) return result;
    auto logits = network_.Forward(input_, true);
    absl::StatusOr<Tensor*> stats =
        logits.ok() ? loss_.Compute(**logits, labels) : absl::StatusOr<Tensor*>(logits.status());
    if (stats.ok()) result.error = network_.AddRegularizationLoss(**stats);
    if (stats.ok() && result.error.ok()) result.error = network_.Backward(loss_.Backward());
    if (!stats.ok()) {
      result.error = stats.status();
      return result;
    }
    result.device_loss = (*stats)->Slice(nn::kLossMean, {1});
    result.device_scalars.emplace("train_accuracy", (*stats)->Slice(nn::kLossAccuracy, {1}));
    return result;
  }

  void after_train(Session& session, bool) override {
    if (!records_) return;
    if (devices_ != nullptr) observed_->device_bytes_at_end = devices_->traffic().to_device.bytes;
    for (const Variable* v : session.variables()) {
      observed_->final_values[v->name].assign(v->value.values().begin(), v->value.values().end());
    }
    for (const Variable* s : session.state()) {
      observed_->final_state[s->name].assign(s->value.values().begin(), s->value.values().end());
    }
  }

 private:
  SimulatedDevices* devices_;
  Observed* observed_;
  std::string warm_start_from_;
  optim::OptimizerConfig optimizer_;
  bool records_ = false;
  nn::Sequential network_;
  nn::SoftmaxCrossEntropy loss_;
  Tensor input_;
  Variable running_{"running/mean", Tensor(), Tensor()};
};

struct Run {
  std::string model_dir = {};
  std::int64_t steps = 10;
  std::vector<std::string> flags = {};
  std::string warm_start_from = {};
  optim::OptimizerConfig optimizer = {
      .name = "adam", .learning_rate = optim::LearningRateSchedule::Constant(0.05f)};
};

// Runs the job on `devices` (two CPU replicas when empty); the exit code and what was observed.
std::pair<int, Observed> Train(const Run& run, const std::vector<Device>& devices,
                               SimulatedDevices* sim) {
  Observed observed;
  std::vector<std::string> flags = {"--max_steps=" + std::to_string(run.steps),
                                    "--model_dir=" + run.model_dir,
                                    "--replicas_per_worker=2",
                                    "--save_checkpoints_secs=0",
                                    "--check_variables_steps=0",
                                    "--allreduce_bucket_bytes=128"};
  flags.insert(flags.end(), run.flags.begin(), run.flags.end());
  std::unique_ptr<std::FILE, int (*)(std::FILE*)> log(std::tmpfile(), &std::fclose);
  const int code = RunLocalTraining(
      flags,
      [&] {
        return std::make_unique<TinyModel>(sim, &observed, run.warm_start_from, run.optimizer);
      },
      log.get(), devices);
  if (code != 0) {
    std::rewind(log.get());
    char line[4096];
    while (std::fgets(line, sizeof(line), log.get()) != nullptr) MESSAGE(line);
  }
  return {code, std::move(observed)};
}

bool SameBits(const std::map<std::string, std::vector<float>>& a,
              const std::map<std::string, std::vector<float>>& b) {
  if (a.size() != b.size() || a.empty()) return false;
  for (const auto& [name, values] : a) {
    auto other = b.find(name);
    if (other == b.end() || other->second.size() != values.size() ||
        std::memcmp(values.data(), other->second.data(), values.size() * sizeof(float)) != 0) {
      return false;
    }
  }
  return true;
}

class TempDir {
 public:
  TempDir() {
    char pattern[] = "/tmp/taas-sim-runtime-XXXXXX";
    path_ = ::mkdtemp(pattern);
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  std::string Sub(const std::string& name) const { return (fs::path(path_) / name).string(); }

 private:
  std::string path_;
};

TEST_CASE("between steps only the loss, every log_steps, leaves the devices") {
  SimulatedDevices devices;
  TempDir dir;
  auto [code, observed] = Train({.model_dir = dir.Sub("job"),
                                 .steps = 10,
                                 .flags = {"--log_steps=3", "--save_summaries_steps=0"}},
                                kTwoDevices, &devices);
  REQUIRE(code == 0);
  REQUIRE(observed.host_bytes_at_train.size() == 10);
  // Between train() k and k + 1 (k = 1..9): the reduced loss, 4 bytes, after steps 3, 6 and 9.
  for (std::size_t k = 1; k < observed.host_bytes_at_train.size(); ++k) {
    CAPTURE(k);
    const std::int64_t moved =
        observed.host_bytes_at_train[k] - observed.host_bytes_at_train[k - 1];
    CHECK(moved == (k % 3 == 0 ? 4 : 0));
  }
}

TEST_CASE("a step with state moves no state bytes between host and device") {
  TempDir dir;
  // With a checkpoint at step 5: the state comes to the host for it, and only for it.
  const auto run = [&](const std::string& name, std::int64_t steps, SimulatedDevices& devices) {
    return Train(
        {.model_dir = dir.Sub(name),
         .steps = steps,
         .flags = {"--log_steps=100", "--save_summaries_steps=0", "--save_checkpoints_steps=5"}},
        kTwoDevices, &devices);
  };
  SimulatedDevices devices;
  auto [code, observed] = run("job", 10, devices);
  REQUIRE(code == 0);
  REQUIRE(observed.device_bytes_at_train.size() == 10);
  REQUIRE(observed.final_state.at("running/mean").size() == 4);
  // The same job stopped after 6 steps: the 4 steps more cost each replica its 4 batches on its
  // device and nothing else: the state stays there. (Whole runs are compared, by what went to the
  // devices up to replica 0's after_train, once every replica's last step ended: within one step
  // replica 1 may copy its batch before or after replica 0 records.)
  SimulatedDevices shorter_devices;
  auto [shorter_code, shorter] = run("shorter", 6, shorter_devices);
  REQUIRE(shorter_code == 0);
  constexpr std::int64_t kBatchBytes = kBatch * 4 * sizeof(float);
  CHECK(observed.device_bytes_at_end - shorter.device_bytes_at_end == 2 * 4 * kBatchBytes);
  // To the host: nothing but the checkpoint after step 5 (seen at train() 5), which holds more
  // than the variables' values (their slots and the state too).
  std::int64_t values_bytes = 0;
  for (const auto& [name, values] : observed.final_values) {
    values_bytes += static_cast<std::int64_t>(values.size() * sizeof(float));
  }
  for (std::size_t k = 1; k < observed.host_bytes_at_train.size(); ++k) {
    CAPTURE(k);
    const std::int64_t to_host =
        observed.host_bytes_at_train[k] - observed.host_bytes_at_train[k - 1];
    if (k == 5) {
      CHECK(to_host > values_bytes);
    } else {
      CHECK(to_host == 0);
    }
  }
  // The chief's state (its first replica's) is what the checkpoint holds.
  std::vector<std::string> skipped;
  auto saved = checkpoint::LoadLatest(dir.Sub("job"), &skipped);
  REQUIRE(saved.ok());
  REQUIRE(saved->has_value());
  const checkpoint::Entry* entry = (*saved)->Find("running/mean");
  REQUIRE(entry != nullptr);
  CHECK(entry->values == observed.final_state.at("running/mean"));
  CHECK((*saved)->Find("running/mean/slot_0") == nullptr);
}

TEST_CASE("two simulated devices train the CPU path's variables, bit for bit") {
  SimulatedDevices devices;
  TempDir dir;
  auto [cpu_code, on_cpu] = Train({.model_dir = dir.Sub("cpu"), .steps = 12}, {}, nullptr);
  auto [sim_code, on_sim] =
      Train({.model_dir = dir.Sub("sim"), .steps = 12}, kTwoDevices, &devices);
  REQUIRE(cpu_code == 0);
  REQUIRE(sim_code == 0);
  CHECK(SameBits(on_cpu.final_values, on_sim.final_values));
  CHECK(SameBits(on_cpu.final_state, on_sim.final_state));
}

TEST_CASE("clipped by global norm, with AdamW or RMSprop, the state stays on the devices") {
  // The average gradient is clipped where it lies, on each device, then every variable updated:
  // between steps still only the loss (every log_steps) leaves the devices, and the variables are
  // the CPU path's bit for bit. Without the clip they differ, so it did clip.
  const auto schedule = optim::LearningRateSchedule::CosineDecay(0.0f, 20, 0.1f, 0.05f, 3);
  const std::vector<optim::OptimizerConfig> configs = {{.name = "adamw",
                                                        .learning_rate = schedule,
                                                        .weight_decay = 0.05f,
                                                        .exclude_from_weight_decay = {"bias"},
                                                        .global_clipnorm = 0.05f},
                                                       {.name = "rmsprop",
                                                        .learning_rate = schedule,
                                                        .momentum = 0.5f,
                                                        .centered = true,
                                                        .global_clipnorm = 0.05f}};
  for (const optim::OptimizerConfig& config : configs) {
    CAPTURE(config.name);
    SimulatedDevices devices;
    TempDir dir;
    auto [sim_code, on_sim] = Train({.model_dir = dir.Sub("sim"),
                                     .steps = 10,
                                     .flags = {"--log_steps=3", "--save_summaries_steps=0"},
                                     .optimizer = config},
                                    kTwoDevices, &devices);
    REQUIRE(sim_code == 0);
    REQUIRE(on_sim.host_bytes_at_train.size() == 10);
    for (std::size_t k = 1; k < on_sim.host_bytes_at_train.size(); ++k) {
      CAPTURE(k);
      const std::int64_t moved = on_sim.host_bytes_at_train[k] - on_sim.host_bytes_at_train[k - 1];
      CHECK(moved == (k % 3 == 0 ? 4 : 0));
    }
    auto [cpu_code, on_cpu] =
        Train({.model_dir = dir.Sub("cpu"), .steps = 10, .optimizer = config}, {}, nullptr);
    REQUIRE(cpu_code == 0);
    CHECK(SameBits(on_cpu.final_values, on_sim.final_values));
    optim::OptimizerConfig unclipped = config;
    unclipped.global_clipnorm = 0.0f;
    auto [free_code, free] =
        Train({.model_dir = dir.Sub("free"), .steps = 10, .optimizer = unclipped}, {}, nullptr);
    REQUIRE(free_code == 0);
    CHECK_FALSE(SameBits(on_cpu.final_values, free.final_values));
  }
}

TEST_CASE("checkpoints, summaries, warm start and resuming work from device state") {
  SimulatedDevices devices;
  TempDir dir;
  // Ten steps with a checkpoint every four and summaries every two, then resumed to twenty.
  const Run first{.model_dir = dir.Sub("resumed"),
                  .steps = 10,
                  .flags = {"--save_checkpoints_steps=4", "--save_summaries_steps=2"}};
  auto [first_code, at_ten] = Train(first, kTwoDevices, &devices);
  REQUIRE(first_code == 0);
  std::vector<std::string> skipped;
  auto saved = checkpoint::LoadLatest(first.model_dir, &skipped);
  REQUIRE(saved.ok());
  REQUIRE(saved->has_value());
  CHECK((*saved)->global_step == 10);
  for (const auto& [variable, values] : at_ten.final_values) {
    // A named copy: clang 14 cannot capture a structured binding in CAPTURE's lambda.
    const std::string& name = variable;
    CAPTURE(name);
    const checkpoint::Entry* entry = (*saved)->Find(name);
    REQUIRE(entry != nullptr);
    CHECK(entry->values == values);
    // Adam's two slots are saved from the devices too, and have moved off zero.
    const checkpoint::Entry* slot = (*saved)->Find(name + "/slot_1");
    REQUIRE(slot != nullptr);
    CHECK(std::any_of(slot->values.begin(), slot->values.end(), [](float v) { return v != 0; }));
  }
  bool loss_summary = false, accuracy_summary = false;
  for (const auto& file : fs::directory_iterator(first.model_dir)) {
    if (file.path().filename().string().rfind("events.out.tfevents", 0) != 0) continue;
    auto events = summary::ReadEventFile(file.path().string());
    REQUIRE(events.ok());
    for (const auto& event : *events) {
      for (const auto& [tag, value] : event.scalars) {
        loss_summary |= tag == "loss" && value > 0.0f;
        accuracy_summary |= tag == "train_accuracy" && value >= 0.0f && value <= 1.0f;
      }
    }
  }
  CHECK(loss_summary);
  CHECK(accuracy_summary);

  Run resumed = first;
  resumed.steps = 20;
  auto [resumed_code, resumed_values] = Train(resumed, kTwoDevices, &devices);
  auto [straight_code, straight] =
      Train({.model_dir = dir.Sub("straight"), .steps = 20}, kTwoDevices, &devices);
  REQUIRE(resumed_code == 0);
  REQUIRE(straight_code == 0);
  CHECK(SameBits(resumed_values.final_values, straight.final_values));
  CHECK(SameBits(resumed_values.final_state, straight.final_state));  // restored on the devices

  // A new job warm-started from the first one's checkpoint, on the devices and on the CPU.
  auto [warm_code, warm] =
      Train({.model_dir = dir.Sub("warm"), .steps = 3, .warm_start_from = first.model_dir},
            kTwoDevices, &devices);
  auto [warm_cpu_code, warm_cpu] =
      Train({.model_dir = dir.Sub("warm-cpu"), .steps = 3, .warm_start_from = first.model_dir}, {},
            nullptr);
  auto [cold_code, cold] = Train({.model_dir = dir.Sub("cold"), .steps = 3}, kTwoDevices, &devices);
  REQUIRE(warm_code == 0);
  REQUIRE(warm_cpu_code == 0);
  REQUIRE(cold_code == 0);
  CHECK(SameBits(warm.final_values, warm_cpu.final_values));
  CHECK(SameBits(warm.final_state, warm_cpu.final_state));
  CHECK_FALSE(SameBits(warm.final_values, cold.final_values));
  CHECK_FALSE(SameBits(warm.final_state, cold.final_state));  // warm-started by name too
}

}  // namespace
}  // namespace taas::sim
