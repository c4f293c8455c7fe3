// The runtime's device choice against a CUDA driver that cannot answer: a job that asks for the
// CPU never asks CUDA, one that leaves the choice to the runtime fails naming the driver's error.
#include <doctest/doctest.h>

#include <cstdio>
#include <memory>

#include "internal.h"

namespace taas::runtime {
namespace {

// CUDA's memory on a node whose driver is too old: counting its devices fails.
class BrokenDriver final : public DeviceMemory {
 public:
  BrokenDriver() : previous_(RegisterDeviceMemory(DeviceType::kCuda, this)) {}
  ~BrokenDriver() override { RegisterDeviceMemory(DeviceType::kCuda, previous_); }
  void* Allocate(Device, std::size_t) override { return nullptr; }
  void Free(Device, void*) override {}
  void Copy(void*, Device, const void*, Device, std::size_t) override {}
  absl::StatusOr<int> DeviceCount() override {
    ++asked;
    return absl::FailedPreconditionError("cudaErrorInsufficientDriver");
  }
  int asked = 0;

 private:
  DeviceMemory* previous_;
};

config::RuntimeConfig ConfigWith(const std::string& device) {
  std::vector<std::string> flags = {"--strategy=collective"};
  if (!device.empty()) flags.push_back("--device=" + device);
  auto parsed = config::ParseConfig(flags, {});
  REQUIRE(parsed.ok());
  return *parsed;
}

TEST_CASE("TAAS_DEVICE=cpu asks nothing of a broken CUDA driver; the default reports it") {
  BrokenDriver driver;
  std::unique_ptr<std::FILE, int (*)(std::FILE*)> log(std::tmpfile(), &std::fclose);
  const Logger logger(log.get());
  config::RuntimeConfig on_cpu = ConfigWith("cpu");
  CHECK(ChooseAndPrepareDevices(on_cpu, logger) == "cpu (--device=cpu)");
  CHECK(on_cpu.devices == std::vector<Device>{Device::Cpu()});
  CHECK(driver.asked == 0);

  config::RuntimeConfig by_default = ConfigWith("");
  CHECK(ChooseAndPrepareDevices(by_default, logger).empty());
  CHECK(by_default.devices.empty());  // the caller exits with kExitBadConfig
  CHECK(driver.asked == 1);
}

}  // namespace
}  // namespace taas::runtime
