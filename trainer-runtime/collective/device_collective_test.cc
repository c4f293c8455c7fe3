#include "taas/collective/device_collective.h"

#include <doctest/doctest.h>

namespace taas::collective {
namespace {

absl::StatusOr<std::unique_ptr<DeviceCollective>> Refuse(Collective&,
                                                         const DeviceCollectiveOptions& options) {
  return absl::UnavailableError("no group on " + DeviceName(options.device));
}

class CollectiveStub final : public Collective {
 public:
  int rank() const override { return 0; }
  int size() const override { return 1; }
  std::string Describe() const override { return "stub"; }
  Handle AllReduce(std::span<float>, ReduceOp) override { return Handle(); }
  Handle Broadcast(std::span<std::byte>, int) override { return Handle(); }
};

TEST_CASE("device collectives: a factory per device type, none for the host") {
  // A build without a device engine finds none; the runtime then keeps its CPU groups.
  // (Compared into bools: doctest cannot print a function pointer.)
  const DeviceCollectiveFactory before = DeviceCollectiveFor(DeviceType::kCuda);
  const bool replaced_before = RegisterDeviceCollective(DeviceType::kCuda, &Refuse) == before;
  const bool found = DeviceCollectiveFor(DeviceType::kCuda) == &Refuse;
  const bool host_refused = RegisterDeviceCollective(DeviceType::kCpu, &Refuse) == nullptr;
  const bool host_none = DeviceCollectiveFor(DeviceType::kCpu) == nullptr;
  const bool restored = RegisterDeviceCollective(DeviceType::kCuda, before) == &Refuse;
  CHECK(replaced_before);
  CHECK(found);
  CHECK(host_refused);
  CHECK(host_none);
  CHECK(restored);
  CollectiveStub stub;
  auto refused = Refuse(stub, {.device = {DeviceType::kCuda, 1}});
  CHECK(refused.status().message() == "no group on cuda:1");
}

}  // namespace
}  // namespace taas::collective
