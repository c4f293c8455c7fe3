// For tests of code that moves tensors to a device, on machines without one: host memory
// registered as the memory of DeviceType::kCuda for the object's lifetime, so tensors "on cuda:0"
// are host memory the test can read. Counts copies; `full` makes allocations fail as a full device
// does; `copy_error` makes copies throw as a failing device's do. Not thread-safe to configure.
#pragma once

#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <string>

#include "taas/tensor/device.h"

namespace taas {

class TestDeviceMemory final : public DeviceMemory {
 public:
  TestDeviceMemory() : previous_(RegisterDeviceMemory(DeviceType::kCuda, this)) {}
  ~TestDeviceMemory() override { RegisterDeviceMemory(DeviceType::kCuda, previous_); }
  TestDeviceMemory(const TestDeviceMemory&) = delete;
  TestDeviceMemory& operator=(const TestDeviceMemory&) = delete;

  void* Allocate(Device, std::size_t bytes) override {
    return full ? nullptr : std::calloc(1, bytes);
  }
  void Free(Device, void* memory) override { std::free(memory); }
  void Copy(void* to, Device, const void* from, Device, std::size_t bytes) override {
    if (!copy_error.empty()) throw std::runtime_error(copy_error);
    ++copies;
    std::memcpy(to, from, bytes);
  }
  int DeviceCount() override { return devices; }

  bool full = false;
  std::string copy_error;
  int copies = 0;
  int devices = 1;

 private:
  DeviceMemory* previous_;
};

}  // namespace taas
