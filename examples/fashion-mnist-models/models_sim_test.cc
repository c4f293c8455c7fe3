// The Fashion-MNIST CNN's all-reduce training on two simulated devices (the test device, host
// memory the host may not read), as on two GPUs: between steps only the reduced loss, every
// log_steps, is copied to the host, and the variables after N steps are the CPU path's bit for
// bit.
#include <doctest/doctest.h>

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "taas/fashion_mnist/trainer.h"
#include "taas/runtime/local.h"
#include "taas/sim_device/sim_device.h"

namespace taas::fashion_mnist {
namespace {

namespace fs = std::filesystem;

struct Observed {
  std::vector<std::int64_t> host_bytes_at_train;  // bytes copied to the host, at each train()
  std::map<std::string, std::vector<float>> final_values;
};

// The CNN trainer as the runtime runs it; its first replica records the device's traffic at
// every train() and the variables at after_train.
class Recorded final : public DistModel {
 public:
  Recorded(sim::SimulatedDevices* devices, Observed* observed)
      : devices_(devices), observed_(observed) {}

  absl::Status build_model(ModelBuilder& builder) override {
    records_ = builder.info().replica_in_worker == 0;
    return cnn_.build_model(builder);
  }
  StepResult train(Session& session) override {
    if (records_ && devices_ != nullptr) {
      observed_->host_bytes_at_train.push_back(devices_->traffic().to_host.bytes);
    }
    return cnn_.train(session);
  }
  void after_train(Session& session, bool) override {
    if (!records_) return;
    for (const Variable* v : session.variables()) {
      observed_->final_values[v->name].assign(v->value.values().begin(), v->value.values().end());
    }
  }

 private:
  sim::SimulatedDevices* devices_;
  Observed* observed_;
  bool records_ = false;
  FashionMnistTrainer cnn_{"cnn"};
};

std::pair<int, Observed> Train(const std::string& model_dir, const std::vector<Device>& devices,
                               sim::SimulatedDevices* sim) {
  Observed observed;
  const std::vector<std::string> flags = {"--max_steps=6",
                                          "--model_dir=" + model_dir,
                                          "--replicas_per_worker=2",
                                          "--log_steps=2",
                                          "--save_summaries_steps=0",
                                          "--save_checkpoints_secs=0",
                                          "--check_variables_steps=0",
                                          "--",
                                          "--batch_size=16"};
  std::unique_ptr<std::FILE, int (*)(std::FILE*)> log(std::tmpfile(), &std::fclose);
  const int code = RunLocalTraining(
      flags, [&] { return std::make_unique<Recorded>(sim, &observed); }, log.get(), devices);
  if (code != 0) {
    std::rewind(log.get());
    char line[4096];
    while (std::fgets(line, sizeof(line), log.get()) != nullptr) MESSAGE(line);
  }
  return {code, std::move(observed)};
}

TEST_CASE("the CNN on two simulated devices: only the loss leaves them, and the CPU's bits") {
  sim::SimulatedDevices devices;
  char pattern[] = "/tmp/taas-cnn-sim-XXXXXX";
  const fs::path dir = ::mkdtemp(pattern);
  auto [sim_code, on_sim] =
      Train((dir / "sim").string(),
            {Device{DeviceType::kSimulated, 0}, Device{DeviceType::kSimulated, 1}}, &devices);
  auto [cpu_code, on_cpu] = Train((dir / "cpu").string(), {}, nullptr);
  fs::remove_all(dir);
  REQUIRE(sim_code == 0);
  REQUIRE(cpu_code == 0);

  // Between train() k and k + 1: the reduced loss (4 bytes) after the steps that log (2 and 4),
  // and nothing else: no variable, gradient, slot or statistic.
  REQUIRE(on_sim.host_bytes_at_train.size() == 6);
  for (std::size_t k = 1; k < on_sim.host_bytes_at_train.size(); ++k) {
    CAPTURE(k);
    CHECK(on_sim.host_bytes_at_train[k] - on_sim.host_bytes_at_train[k - 1] ==
          (k % 2 == 0 ? 4 : 0));
  }

  REQUIRE(on_sim.final_values.size() == 10);  // five layers' kernels and biases
  for (const auto& [variable, values] : on_cpu.final_values) {
    // A named copy: clang 14 cannot capture a structured binding in CAPTURE's lambda.
    const std::string& name = variable;
    CAPTURE(name);
    const auto& device_values = on_sim.final_values[name];
    REQUIRE(device_values.size() == values.size());
    CHECK(std::memcmp(values.data(), device_values.data(), values.size() * sizeof(float)) == 0);
  }
}

}  // namespace
}  // namespace taas::fashion_mnist
