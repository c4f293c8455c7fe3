// VisibleDeviceCount's decision (device_count.h) for what CUDA may answer: only "no device" and
// "no driver installed" mean no GPU; a driver too old or broken is an error naming the fix. Runs
// without a GPU or a driver (label unit).
#include "device_count.h"

#include <doctest/doctest.h>

#include <string>

#include "taas/cuda/device.h"

namespace taas::cuda {
namespace {

constexpr int kDriver12_4 = 12040;
constexpr int kDriver13_0 = 13000;
constexpr int kRuntime13_0 = 13000;

std::string MessageOf(const absl::StatusOr<int>& count) {
  return std::string(count.status().message());
}

TEST_CASE("devices CUDA counts are the count; no device or no driver at all is none") {
  CHECK(*DeviceCountFrom(cudaSuccess, 8, kDriver13_0, kRuntime13_0) == 8);
  CHECK(*DeviceCountFrom(cudaErrorNoDevice, 0, kDriver13_0, kRuntime13_0) == 0);
  // No libcuda.so.1 to load (a build machine): the runtime says the driver is insufficient and
  // reports driver version 0.
  CHECK(*DeviceCountFrom(cudaErrorInsufficientDriver, 0, 0, kRuntime13_0) == 0);
}

TEST_CASE("a driver too old for this build is an error naming both versions and the fix") {
  const auto count = DeviceCountFrom(cudaErrorInsufficientDriver, 0, kDriver12_4, kRuntime13_0);
  REQUIRE_FALSE(count.ok());
  CHECK(absl::IsFailedPrecondition(count.status()));
  const std::string message = MessageOf(count);
  CHECK(message.find("cudaErrorInsufficientDriver") != std::string::npos);
  CHECK(message.find("supports CUDA 12.4, this binary's CUDA runtime is 13.0") !=
        std::string::npos);
  CHECK(message.find("install an NVIDIA driver for CUDA 13.0 or newer") != std::string::npos);
}

TEST_CASE("any other failure with a driver installed is an error naming what to check") {
  for (cudaError_t error : {cudaErrorInitializationError, cudaErrorDevicesUnavailable,
                            cudaErrorSystemNotReady, cudaErrorNotPermitted, cudaErrorUnknown}) {
    CAPTURE(error);
    const auto count = DeviceCountFrom(error, 0, kDriver13_0, kRuntime13_0);
    REQUIRE_FALSE(count.ok());
    CHECK(absl::IsFailedPrecondition(count.status()));
    const std::string message = MessageOf(count);
    CHECK(message.find(cudaGetErrorName(error)) != std::string::npos);
    CHECK(message.find("NVIDIA_VISIBLE_DEVICES") != std::string::npos);
    CHECK(message.find("nvidia-smi") != std::string::npos);
  }
}

TEST_CASE("this machine's answer is a count or an error, never a crash") {
  // The build machines have no GPU: 0, or an error naming the driver where one is broken.
  const absl::StatusOr<int> count = VisibleDeviceCount();
  if (count.ok()) {
    CHECK(*count >= 0);
  } else {
    CHECK(MessageOf(count).find("counting the CUDA devices") == 0);
  }
}

}  // namespace
}  // namespace taas::cuda
