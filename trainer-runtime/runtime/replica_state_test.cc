// The runtime's fused variable buffers, on the simulated device (host memory the host may not
// read): the model's variables become views of them, and the host sees them only through copies.
#include "replica_state.h"

#include <doctest/doctest.h>

#include "taas/sim_device/memory.h"

namespace taas::runtime {
namespace {

constexpr Device kSim0{DeviceType::kSimulated, 0};

std::vector<float> OnHost(const Tensor& tensor) {
  const Tensor host = tensor.To(Device::Cpu());
  return {host.values().begin(), host.values().end()};
}

TEST_CASE("the variables become views of aligned parts, laid out last registered first") {
  Variable a{"a", Tensor({2}, std::vector<float>{1, 2}), Tensor({2})};
  Variable b{"b", Tensor({3, 7}), Tensor()};  // a gradient of any shape until train() runs
  std::vector<Variable*> registered = {&a, &b};
  auto state = ReplicaState::Create(registered, Device::Cpu());
  REQUIRE(state.ok());
  const auto& parts = (*state)->parts();
  CHECK(parts[1].offset == 0);  // b, registered last, comes first
  CHECK(parts[1].padded == 32);
  CHECK(parts[0].offset == 32);
  CHECK((*state)->elements() == 48);
  CHECK((*state)->loss_offset() == 48);
  CHECK(registered[0] == &a);  // on the host, the runtime works on the model's own variables
  CHECK(a.value.is_view());
  CHECK(a.value.data() == (*state)->values().data() + 32);
  CHECK(b.gradient.shape() == Shape{3, 7});
  CHECK(b.gradient.data() == (*state)->gradients().data());
  CHECK(a.value.values()[1] == 2.0f);
  CHECK((*state)->CheckViews().ok());
  a.gradient = Tensor({2});
  CHECK((*state)->CheckViews().message().rfind("variable a: its gradient is no longer", 0) == 0);
}

TEST_CASE("on a device the runtime gets host mirrors; one copy per buffer, only when stale") {
  sim::SimulatedMemory memory;
  Variable a{"a", Tensor({2}, std::vector<float>{1, 2}), Tensor({2})};
  Variable b{"b", Tensor({3}, std::vector<float>{3, 4, 5}), Tensor({3})};
  std::vector<Variable*> registered = {&a, &b};
  auto created = ReplicaState::Create(registered, kSim0);
  REQUIRE(created.ok());
  ReplicaState& state = **created;
  CHECK(a.value.device() == kSim0);
  CHECK(a.gradient.device() == kSim0);
  CHECK(registered[0] != &a);
  CHECK(registered[0]->name == "a");
  CHECK(registered[1]->value.device() == Device::Cpu());
  CHECK(registered[1]->value.values()[2] == 5.0f);                 // the initial values, kept
  CHECK(memory.traffic().to_device == sim::CopyCount{1, 32 * 4});  // the values, fused

  memory.ResetTraffic();
  CHECK(state.ValuesToHost().ok());  // current: nothing to copy
  CHECK(state.ValuesToDevice().ok());
  CHECK(memory.traffic().to_host.copies + memory.traffic().to_device.copies == 0);

  // A pull writes the mirrors; the model's variables get them in one copy.
  registered[0]->value.values()[1] = 20;
  state.ValuesChangedOnHost();
  REQUIRE(state.ValuesToDevice().ok());
  CHECK(OnHost(a.value)[1] == 20.0f);
  // A step on the device changes them there; the host reads them in one copy.
  REQUIRE(CopyInto(Tensor({3}, std::vector<float>{-1, -2, -3}), b.value).ok());
  state.ValuesChangedOnDevice();
  REQUIRE(state.Synchronize().ok());
  CHECK(registered[1]->value.values()[0] == -1.0f);
  // The gradients, for a push, in one copy.
  REQUIRE(CopyInto(Tensor({3}, std::vector<float>{7, 8, 9}), b.gradient).ok());
  REQUIRE(state.GradientsToHost().ok());
  CHECK(registered[1]->gradient.values()[2] == 9.0f);
  // One copy each way for the values, one for the gradients; the test's own: two to the device
  // (the new values of b and its gradient), one to the host (OnHost).
  CHECK(memory.traffic().to_device.copies == 1 + 2);
  CHECK(memory.traffic().to_host.copies == 2 + 1);
}

TEST_CASE("a full device or none at all is a clear error") {
  Variable a{"big", Tensor({8}), Tensor({8})};
  std::vector<Variable*> registered = {&a};
  {
    sim::SimulatedMemory memory;
    memory.full = true;
    auto state = ReplicaState::Create(registered, kSim0);
    CHECK(state.status().code() == absl::StatusCode::kResourceExhausted);
    CHECK(state.status().message() == "the model's variables (16 floats) do not fit on sim:0");
  }
  auto none = ReplicaState::Create(registered, kSim0);
  CHECK(none.status().code() == absl::StatusCode::kFailedPrecondition);
  CHECK(none.status().message() ==
        "cannot place variables on sim:0: no engine of this binary registered its memory");
}

}  // namespace
}  // namespace taas::runtime
