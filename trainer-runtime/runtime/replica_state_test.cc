// The runtime's variable placement through the core's seam, on a device that is host memory
// registered as cuda:0's (no GPU needed): what a CUDA replica's PS and all-reduce paths rely on.
#include "placement.h"

#include <doctest/doctest.h>

#include "taas/tensor/test_device.h"

namespace taas::runtime {
namespace {

constexpr Device kCuda0{DeviceType::kCuda, 0};

TEST_CASE("the model's variables move to the device; the runtime gets host mirrors") {
  TestDeviceMemory device;
  Variable a{"a", Tensor({2}, std::vector<float>{1, 2}), Tensor({2})};
  Variable b{"b", Tensor({3}, std::vector<float>{3, 4, 5}), Tensor({3})};
  std::vector<Variable*> registered = {&a, &b};
  auto placement = VariablePlacement::Place(registered, kCuda0);
  REQUIRE(placement.ok());
  CHECK(a.value.device() == kCuda0);
  CHECK(a.gradient.device() == kCuda0);
  REQUIRE(registered.size() == 2);
  CHECK(registered[0] != &a);
  CHECK(registered[0]->name == "a");
  CHECK(registered[1]->value.device() == Device::Cpu());
  CHECK(registered[1]->value.data()[2] == 5);  // the initial values, kept

  const int placing_copies = device.copies;  // the initial values, one per variable
  CHECK(placing_copies == 2);
  // A pull writes the mirrors; the model sees them on the device before it runs.
  registered[0]->value.data()[1] = 20;
  REQUIRE((*placement)->ValuesToDevice().ok());
  CHECK(a.value.data()[1] == 20);  // host memory behind the fake device
  // train() writes the gradients on the device; the push reads them from the mirrors.
  b.gradient.data()[0] = -1;
  REQUIRE((*placement)->GradientsToHost().ok());
  CHECK(registered[1]->gradient.data()[0] == -1);
  CHECK(device.copies - placing_copies == 4);
}

TEST_CASE("a gradient of the wrong size or place is the model's error, naming the variable") {
  TestDeviceMemory device;
  Variable a{"dense/kernel", Tensor({4}), Tensor({4})};
  std::vector<Variable*> registered = {&a};
  auto placement = VariablePlacement::Place(registered, kCuda0);
  REQUIRE(placement.ok());
  a.gradient = Tensor({3}, kCuda0);
  absl::Status s = (*placement)->GradientsToHost();
  CHECK(s.code() == absl::StatusCode::kInvalidArgument);
  CHECK(s.message() ==
        "variable dense/kernel: its gradient must have the value's 4 elements on "
        "cuda:0, got 3 on cuda:0");
  a.gradient = Tensor({4});  // left on the host
  CHECK((*placement)->GradientsToHost().message().find("got 4 on cpu") != std::string::npos);
}

TEST_CASE("a full device or none at all is a clear error") {
  Variable a{"big", Tensor({8}), Tensor({8})};
  std::vector<Variable*> registered = {&a};
  {
    TestDeviceMemory device;
    device.full = true;
    auto placement = VariablePlacement::Place(registered, kCuda0);
    CHECK(placement.status().code() == absl::StatusCode::kResourceExhausted);
    CHECK(placement.status().message() == "variable big ([8]) does not fit on cuda:0");
  }
  DeviceMemory* registered_memory = RegisterDeviceMemory(DeviceType::kCuda, nullptr);
  auto none = VariablePlacement::Place(registered, kCuda0);
  CHECK(none.status().code() == absl::StatusCode::kFailedPrecondition);
  RegisterDeviceMemory(DeviceType::kCuda, registered_memory);
  CHECK(ValuesToDevice(nullptr).ok());  // a replica on the host has nothing to copy
  CHECK(GradientsToHost(nullptr).ok());
}

}  // namespace
}  // namespace taas::runtime
