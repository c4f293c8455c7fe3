// The simulated device's memory: tensors live there through the registered DeviceMemory only,
// the host cannot read them, and every copy is counted by direction.
#include "taas/sim_device/memory.h"

#include <doctest/doctest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <new>
#include <stdexcept>
#include <vector>

#include "taas/tensor/tensor.h"

namespace taas::sim {
namespace {

constexpr Device kSim0{DeviceType::kSimulated, 0};
constexpr Device kSim1{DeviceType::kSimulated, 1};

TEST_CASE("tensors on the simulated device move through copies that are counted by direction") {
  SimulatedMemory memory;
  const Tensor host({2, 3}, std::vector<float>{1, 2, 3, 4, 5, 6});
  const Tensor on_device = host.To(kSim0);
  CHECK(on_device.device() == kSim0);
  CHECK(IsDeviceAddress(on_device.data()));
  CHECK_FALSE(IsDeviceAddress(host.data()));
  const Tensor other = on_device.To(kSim1);
  const Tensor back = other.To(Device::Cpu());
  CHECK(back.values()[5] == 6.0f);
  const Traffic traffic = memory.traffic();
  CHECK(traffic.to_device == CopyCount{1, 24});
  CHECK(traffic.on_device == CopyCount{1, 24});
  CHECK(traffic.to_host == CopyCount{1, 24});
  memory.ResetTraffic();
  CHECK(memory.traffic().to_host == CopyCount{});
  CHECK(*memory.DeviceCount() == 2);
  CHECK(memory.Prepare(kSim1).ok());
  CHECK(memory.Prepare(Device{DeviceType::kSimulated, 2}).status().message() ==
        "sim:2: no such simulated device (2 registered)");
}

TEST_CASE("the host cannot read a device tensor: values() refuses, a dereference faults") {
  SimulatedMemory memory;
  Tensor on_device({4}, kSim0);
  CHECK_THROWS_WITH_AS(on_device.values(),
                       "values() of a tensor on sim:0: the host may not read a device's memory; "
                       "copy it with To() or CopyInto()",
                       std::logic_error);
  // A read through data() is a fault in a child, whatever catches it (ASan reports and exits).
  const pid_t child = fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    volatile float read = on_device.data()[0];
    (void)read;
    _exit(0);
  }
  int status = 0;
  REQUIRE(waitpid(child, &status, 0) == child);
  const bool faulted = WIFSIGNALED(status)
                           ? WTERMSIG(status) == SIGSEGV || WTERMSIG(status) == SIGBUS
                           : WEXITSTATUS(status) != 0;
  CHECK(faulted);
}

TEST_CASE("views of device memory stay device addresses; CopyInto moves parts") {
  SimulatedMemory memory;
  Tensor fused({8}, kSim0);
  Tensor part = fused.Slice(4, {2, 2});
  CHECK(part.is_view());
  CHECK(part.device() == kSim0);
  CHECK(IsDeviceAddress(part.data()));
  REQUIRE(CopyInto(Tensor({2, 2}, std::vector<float>{1, 2, 3, 4}), part).ok());
  Tensor host({8});
  REQUIRE(CopyInto(fused, host).ok());
  CHECK(host.values()[3] == 0.0f);
  CHECK(host.values()[7] == 4.0f);
  CHECK(CopyInto(fused, part).message() == "cannot copy a tensor of [8] into one of [2, 2]");
  CHECK_THROWS_AS(fused.Slice(6, {3}), std::invalid_argument);
}

TEST_CASE("a full device and a failing copy behave as a device's do") {
  SimulatedMemory memory;
  memory.full = true;
  CHECK_THROWS_AS(Tensor({4}, kSim0), std::bad_alloc);
  memory.full = false;
  Tensor on_device({4}, kSim0);
  memory.copy_error = "the device was lost";
  Tensor host({4});
  const absl::Status failed = CopyInto(on_device, host);
  CHECK(failed.code() == absl::StatusCode::kInternal);
  CHECK(failed.message() == "copying [4] from sim:0 to cpu: the device was lost");
}

}  // namespace
}  // namespace taas::sim
