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
  std::vector<Variable*> no_state;
  auto state = ReplicaState::Create(registered, no_state, Device::Cpu());
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
  std::vector<Variable*> no_state;
  auto created = ReplicaState::Create(registered, no_state, kSim0);
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

TEST_CASE("state stays the model's own tensor; on a device, one copy per state when stale") {
  sim::SimulatedMemory memory;
  Variable w{"w", Tensor({2}, std::vector<float>{1, 2}), Tensor({2})};
  Variable mean{"mean", Tensor({3}, std::vector<float>{0, 1, 2}).To(kSim0), Tensor()};
  float* const model_data = mean.value.data();
  std::vector<Variable*> registered = {&w};
  std::vector<Variable*> states = {&mean};
  auto created = ReplicaState::Create(registered, states, kSim0);
  REQUIRE(created.ok());
  ReplicaState& state = **created;
  CHECK(mean.value.data() == model_data);  // never fused, never replaced
  CHECK(state.model_states()[0] == &mean);
  REQUIRE(states[0] != &mean);
  CHECK(states[0]->name == "mean");
  CHECK(states[0]->value.device() == Device::Cpu());
  CHECK(states[0]->value.values()[2] == 2.0f);

  // Steps change it on the device: nothing moves until the host reads it, in one copy.
  memory.ResetTraffic();
  for (int step = 0; step < 3; ++step) {
    REQUIRE(state.ValuesToDevice().ok());
    state.StateChangedOnDevice();
  }
  CHECK(memory.traffic().to_host.copies + memory.traffic().to_device.copies == 0);
  REQUIRE(CopyInto(Tensor({3}, std::vector<float>{5, 6, 7}), mean.value).ok());
  state.StateChangedOnDevice();
  REQUIRE(state.StateToHost().ok());
  REQUIRE(state.StateToHost().ok());  // current: nothing more
  CHECK(states[0]->value.values()[0] == 5.0f);
  // A restore writes the mirror; the model's tensor gets it in one copy.
  states[0]->value.values()[1] = 60;
  state.StateChangedOnHost();
  REQUIRE(state.Synchronize().ok());
  CHECK(OnHost(mean.value)[1] == 60.0f);
  // The test's own: one copy each way (the new values, OnHost).
  CHECK(memory.traffic().to_device.copies == 1 + 1);
  CHECK(memory.traffic().to_host.copies == 1 + 1);

  // On the host the runtime works on the model's own state.
  Variable host_mean{"mean", Tensor({1}), Tensor()};
  std::vector<Variable*> host_states = {&host_mean};
  auto on_host = ReplicaState::Create(registered, host_states, Device::Cpu());
  REQUIRE(on_host.ok());
  CHECK(host_states[0] == &host_mean);
}

TEST_CASE("a full device or none at all is a clear error") {
  Variable a{"big", Tensor({8}), Tensor({8})};
  std::vector<Variable*> registered = {&a};
  std::vector<Variable*> no_state;
  {
    sim::SimulatedMemory memory;
    memory.full = true;
    auto state = ReplicaState::Create(registered, no_state, kSim0);
    CHECK(state.status().code() == absl::StatusCode::kResourceExhausted);
    CHECK(state.status().message() == "the model's variables (16 floats) do not fit on sim:0");
  }
  auto none = ReplicaState::Create(registered, no_state, kSim0);
  CHECK(none.status().code() == absl::StatusCode::kFailedPrecondition);
  CHECK(none.status().message() ==
        "cannot place variables on sim:0: no engine of this binary registered its memory");
}

}  // namespace
}  // namespace taas::runtime
