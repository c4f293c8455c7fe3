#include "taas/tensor/tensor.h"

#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <map>
#include <stdexcept>
#include <vector>

#include "taas/tensor/initializers.h"

namespace taas {
namespace {

TEST_CASE("host tensors: zeroed, aligned, deep copies, reshape") {
  Tensor t({2, 3});
  CHECK(t.size() == 6);
  CHECK(t.device() == Device::Cpu());
  CHECK(reinterpret_cast<std::uintptr_t>(t.data()) % 64 == 0);
  for (float v : t.values()) CHECK(v == 0.0f);
  t.values()[4] = 5.0f;
  Tensor copy = t;
  copy.values()[4] = 1.0f;
  CHECK(t.values()[4] == 5.0f);
  t.Reshape({3, 2});
  CHECK(ShapeString(t.shape()) == "[3, 2]");
  CHECK_THROWS_AS(t.Reshape({4}), std::invalid_argument);
  CHECK_THROWS_AS(Tensor({-1, 2}), std::invalid_argument);
  CHECK(Tensor().size() == 1);  // a scalar
  CHECK(Tensor({0}).size() == 0);
  CHECK(NumElements({}) == 1);
}

// Another device's memory, as an engine (issue 17's CUDA) provides it: here host memory that
// counts what the tensor asks of it, to show that tensors on another device allocate, copy and free
// through the registered memory and nothing else.
class CountingMemory final : public DeviceMemory {
 public:
  void* Allocate(Device device, std::size_t bytes) override {
    CHECK(device.type == DeviceType::kCuda);
    ++allocations;
    void* memory = std::calloc(1, bytes);
    live[memory] = bytes;
    return memory;
  }
  void Free(Device, void* memory) override {
    CHECK(live.erase(memory) == 1);
    std::free(memory);
  }
  void Copy(void* to, Device to_device, const void* from, Device from_device,
            std::size_t bytes) override {
    CHECK((to_device.type == DeviceType::kCuda || from_device.type == DeviceType::kCuda));
    ++copies;
    std::memcpy(to, from, bytes);
  }
  int allocations = 0;
  int copies = 0;
  std::map<void*, std::size_t> live;
};

TEST_CASE("a tensor on another device goes through the memory its engine registered") {
  const Device gpu{DeviceType::kCuda, 1};
  CHECK(DeviceName(gpu) == "cuda:1");
  CHECK(DeviceName(Device::Cpu()) == "cpu");
  // No engine: a clear error, not a crash.
  REQUIRE(MemoryFor(DeviceType::kCuda) == nullptr);
  CHECK_THROWS_WITH_AS(Tensor({2}, gpu), "no engine for device cuda:1 is part of this program",
                       std::invalid_argument);

  CountingMemory memory;
  CHECK(RegisterDeviceMemory(DeviceType::kCuda, &memory) == nullptr);
  {
    const std::vector<float> values{1, 2, 3};
    Tensor host({3}, values);
    Tensor on_gpu = host.To(gpu);
    CHECK(on_gpu.device() == gpu);
    CHECK(memory.allocations == 1);
    CHECK(memory.copies == 1);
    Tensor same_device = on_gpu;  // a deep copy on the device
    CHECK(same_device.device() == gpu);
    CHECK(memory.allocations == 2);
    Tensor back = same_device.To(Device::Cpu());
    CHECK(memory.copies == 3);
    CHECK(std::vector<float>(back.values().begin(), back.values().end()) == values);
    CHECK(memory.live.size() == 2);
  }
  CHECK(memory.live.empty());  // every device buffer freed through the engine
  CHECK(RegisterDeviceMemory(DeviceType::kCuda, nullptr) == &memory);
}

// As the layers and models use them: Glorot-uniform for Dense and Conv2D kernels, truncated
// normal and zeros in the Fashion-MNIST models.
TEST_CASE("initialisers are seeded and bounded") {
  Tensor a({1000}), b({1000});
  GlorotUniform(a, 10, 20, 42);
  GlorotUniform(b, 10, 20, 42);
  const float limit = std::sqrt(6.0f / 30.0f);
  for (std::int64_t i = 0; i < 1000; ++i) {
    CHECK(a.data()[i] == b.data()[i]);
    CHECK(std::abs(a.data()[i]) <= limit);
  }
  TruncatedNormal(a, 0.1f, 7);
  double sum_sq = 0;
  for (float v : a.values()) {
    CHECK(std::abs(v) <= 0.2f);
    sum_sq += v * v;
  }
  CHECK(std::sqrt(sum_sq / 1000) > 0.06);
  Zeros(a);
  CHECK(a.data()[999] == 0.0f);
}

}  // namespace
}  // namespace taas
