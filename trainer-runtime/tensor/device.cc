#include "taas/tensor/device.h"

#include <atomic>
#include <cstdlib>
#include <cstring>

#include "taas/tensor/device_slot.h"

namespace taas {
namespace {

// The host: aligned (what oneDNN and AVX-512 want), zeroed memory.
class HostMemory final : public DeviceMemory {
 public:
  static constexpr std::size_t kAlignment = 64;

  void* Allocate(Device, std::size_t bytes) override {
    const std::size_t rounded = (bytes + kAlignment - 1) / kAlignment * kAlignment;
    void* memory = std::aligned_alloc(kAlignment, rounded);
    if (memory != nullptr) std::memset(memory, 0, rounded);
    return memory;
  }
  void Free(Device, void* memory) override { std::free(memory); }
  void Copy(void* to, Device, const void* from, Device, std::size_t bytes) override {
    std::memcpy(to, from, bytes);
  }
};

HostMemory host_memory;
DeviceSlot<DeviceMemory*> device_memory;
std::atomic<int> host_compute_threads{0};

}  // namespace

std::string DeviceName(Device device) {
  switch (device.type) {
    case DeviceType::kCpu:
      return "cpu";
    case DeviceType::kCuda:
      return "cuda:" + std::to_string(device.index);
    case DeviceType::kSimulated:
      return "sim:" + std::to_string(device.index);
  }
  return "unknown";
}

DeviceMemory* MemoryFor(DeviceType type) {
  return type == DeviceType::kCpu ? &host_memory : device_memory.Get(type);
}

DeviceMemory* RegisterDeviceMemory(DeviceType type, DeviceMemory* memory) {
  if (type == DeviceType::kCpu) return &host_memory;  // the host's memory is fixed
  return device_memory.Exchange(type, memory);
}

void SetHostComputeThreads(int threads) {
  host_compute_threads.store(threads > 0 ? threads : 0, std::memory_order_relaxed);
}

int HostComputeThreads() { return host_compute_threads.load(std::memory_order_relaxed); }

}  // namespace taas
