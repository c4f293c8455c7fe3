// The simulated device's group: device buffers all-reduced and broadcast in place over the CPU
// groups the runtime forms (the in-process group of a worker's replicas, the TCP ring across
// workers), with no copy to or from the host.
#include <doctest/doctest.h>

#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "taas/collective/device_collective.h"
#include "taas/collective/in_process.h"
#include "taas/collective/tcp_ring.h"
#include "taas/collective_testing/free_addresses.h"
#include "taas/sim_device/sim_device.h"
#include "taas/tensor/tensor.h"

namespace taas::sim {
namespace {

using collective::Collective;
using collective::ReduceOp;

Device Sim(int index) { return Device{DeviceType::kSimulated, index}; }

// What each member checks after the operations, copied to the host for the checks only.
struct MemberResult {
  std::vector<float> reduced, broadcast;
  absl::Status status, host_buffer;
};

// On member `rank` of `cpu`: forms the device group, all-reduces (mean) [rank + 1, ...] and
// broadcasts rank 0's [7, 8, 9], both in device memory.
MemberResult RunMember(Collective& cpu, int rank) {
  MemberResult result;
  auto group = collective::DeviceCollectiveFor(DeviceType::kSimulated)(
      cpu, {.device = Sim(rank), .timeout_secs = 30});
  if (!group.ok()) {
    result.status = group.status();
    return result;
  }
  const float r = static_cast<float>(rank + 1);
  Tensor values = Tensor({4}, std::vector<float>{r, 2 * r, 3 * r, 4 * r}).To(Sim(rank));
  Tensor shared = Tensor({3}, std::vector<float>{7.0f * r, 8, 9}).To(Sim(rank));
  result.status = (*group)->AllReduce({values.data(), 4}, ReduceOp::kMean).Wait();
  if (result.status.ok()) {
    result.status = (*group)->Broadcast(collective::AsBytes({shared.data(), 3}), 0).Wait();
  }
  std::vector<float> on_host(2);
  result.host_buffer = (*group)->AllReduce(on_host, ReduceOp::kSum).Wait();
  const Tensor reduced = values.To(Device::Cpu()), broadcast = shared.To(Device::Cpu());
  result.reduced.assign(reduced.values().begin(), reduced.values().end());
  result.broadcast.assign(broadcast.values().begin(), broadcast.values().end());
  return result;
}

// Each member copied its two buffers to the device and back for the checks, and nothing else:
// the operations themselves moved no byte between the device and the host.
void CheckMembers(const std::vector<MemberResult>& results, const Traffic& traffic) {
  CHECK(traffic.to_device.copies == 4);
  CHECK(traffic.to_host.copies == 4);
  for (const MemberResult& result : results) {
    CHECK(result.status.ok());
    CHECK(result.reduced == std::vector<float>{1.5f, 3, 4.5f, 6});
    CHECK(result.broadcast == std::vector<float>{7, 8, 9});
    CHECK(result.host_buffer.code() == absl::StatusCode::kInvalidArgument);
  }
}

TEST_CASE("a worker's replicas on two simulated devices reduce their buffers in place") {
  SimulatedDevices devices;
  auto group = collective::InProcessGroup::Create({.members = 2, .cross = nullptr});
  REQUIRE(group.ok());
  std::vector<MemberResult> results(2);
  std::thread second([&] { results[1] = RunMember((*group)->member(1), 1); });
  results[0] = RunMember((*group)->member(0), 0);
  second.join();
  CheckMembers(results, devices.traffic());
}

TEST_CASE("two workers on simulated devices reduce their buffers in place over the TCP ring") {
  SimulatedDevices devices;
  const auto free = collective_testing::FreeLoopbackAddresses(2);
  REQUIRE(free.ok());
  const std::vector<std::string>& addresses = *free;
  std::vector<MemberResult> results(2);
  const auto run = [&](int rank) {
    collective::TcpRingOptions options;
    options.addresses = addresses;
    options.rank = rank;
    options.bind_host = "127.0.0.1";
    options.token = std::string(64, 'a');
    options.timeout_secs = 30;
    auto ring = collective::ConnectTcpRing(options, Logger(stderr, LogLevel::kWarning));
    if (!ring.ok()) {
      results[static_cast<std::size_t>(rank)].status = ring.status();
      return;
    }
    results[static_cast<std::size_t>(rank)] = RunMember(**ring, rank);
  };
  std::thread second(run, 1);
  run(0);
  second.join();
  CheckMembers(results, devices.traffic());
}

}  // namespace
}  // namespace taas::sim
