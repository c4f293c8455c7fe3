// The CUDA memory through the core's seam, as tensors use it (gpu: skipped without a device).
#include "taas/cuda/memory.h"

#include <doctest/doctest.h>

#include <algorithm>
#include <numeric>
#include <vector>

#include "taas/cuda/testing.h"
#include "taas/tensor/tensor.h"

namespace taas::cuda {
namespace {

TEST_CASE("linking taas::cuda registers its memory for kCuda") {
  CHECK(MemoryFor(DeviceType::kCuda) == &Memory());
  CHECK(*Memory().DeviceCount() == VisibleGpus());
  auto line = Memory().Prepare(Device{DeviceType::kCuda, 0});
  REQUIRE(line.ok());
  CHECK(line->rfind("cuda:0 ", 0) == 0);
}

TEST_CASE("a round trip through the device keeps every byte, across staging pieces, counted") {
  const Device gpu{DeviceType::kCuda, 0};
  // Three and a half staging buffers' worth: both buffers are reused, the last piece is short.
  const std::int64_t n = static_cast<std::int64_t>(kStagingBytes * 7 / 2 / sizeof(float)) + 3;
  const std::size_t bytes = static_cast<std::size_t>(n) * sizeof(float);
  Tensor host(Shape{n});
  std::iota(host.data(), host.data() + n, 0.5f);
  auto before = StatsOf(0);
  REQUIRE(before.ok());
  Tensor device = host.To(gpu);
  CHECK(device.device() == gpu);
  Tensor device_copy = device;  // device to device: not a copy to or from the host
  Tensor back = device_copy.To(Device::Cpu());
  REQUIRE(back.size() == n);
  CHECK(std::equal(host.data(), host.data() + n, back.data()));
  auto after = StatsOf(0);
  REQUIRE(after.ok());
  CHECK(after->to_device_copies == before->to_device_copies + 1);
  CHECK(after->to_device_bytes == before->to_device_bytes + bytes);
  CHECK(after->to_host_copies == before->to_host_copies + 1);
  CHECK(after->to_host_bytes == before->to_host_bytes + bytes);
}

TEST_CASE("new device tensors are zeroed, and freed blocks are reused") {
  const Device gpu{DeviceType::kCuda, 0};
  auto before = StatsOf(0);
  REQUIRE(before.ok());
  {
    Tensor a(Shape{1000}, gpu);
    a = Tensor(Shape{7}).To(gpu);
  }
  {
    Tensor b(Shape{1000}, gpu);  // the class of `a`'s first block: reused, zeroed again
    Tensor host = b.To(Device::Cpu());
    CHECK(std::all_of(host.data(), host.data() + 1000, [](float x) { return x == 0.0f; }));
  }
  auto after = StatsOf(0);
  REQUIRE(after.ok());
  CHECK(after->reuses > before->reuses);
  CHECK(after->in_use_bytes == before->in_use_bytes);
}

TEST_CASE("a device that is not there is a permanent error, not a crash") {
  const Device missing{DeviceType::kCuda, VisibleGpus()};
  auto line = Memory().Prepare(missing);
  CHECK(absl::IsFailedPrecondition(line.status()));
  CHECK_THROWS(Tensor(Shape{4}, missing));
}

}  // namespace
}  // namespace taas::cuda
