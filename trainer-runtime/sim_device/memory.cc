#include "taas/sim_device/memory.h"

#include <cstdlib>
#include <cstring>
#include <stdexcept>

namespace taas::sim {
namespace {

// Flipping these bits makes a user-space address non-canonical on x86-64 (bits 63..47 must all
// be equal there), so a dereference faults. Pointer arithmetic within an allocation never reaches
// them, so views (Tensor::Slice) of device memory stay device addresses.
constexpr std::uintptr_t kTag = std::uintptr_t{0x5A} << 56;
constexpr std::size_t kAlignment = 64;

void* Encode(void* address) {
  return reinterpret_cast<void*>(reinterpret_cast<std::uintptr_t>(address) ^ kTag);
}

}  // namespace

bool IsDeviceAddress(const void* address) {
  return (reinterpret_cast<std::uintptr_t>(address) & kTag) == kTag;
}

float* HostAddress(const float* device_address) {
  if (!IsDeviceAddress(device_address)) return const_cast<float*>(device_address);
  return reinterpret_cast<float*>(reinterpret_cast<std::uintptr_t>(device_address) ^ kTag);
}

void SimulatedMemory::Counter::Add(std::size_t n) {
  copies.fetch_add(1, std::memory_order_relaxed);
  bytes.fetch_add(static_cast<std::int64_t>(n), std::memory_order_relaxed);
}

CopyCount SimulatedMemory::Counter::Read() const {
  return {copies.load(std::memory_order_relaxed), bytes.load(std::memory_order_relaxed)};
}

void SimulatedMemory::Counter::Reset() {
  copies.store(0, std::memory_order_relaxed);
  bytes.store(0, std::memory_order_relaxed);
}

SimulatedMemory::SimulatedMemory(int devices)
    : devices_(devices), previous_(RegisterDeviceMemory(DeviceType::kSimulated, this)) {}

SimulatedMemory::~SimulatedMemory() { RegisterDeviceMemory(DeviceType::kSimulated, previous_); }

void* SimulatedMemory::Allocate(Device, std::size_t bytes) {
  if (full) return nullptr;
  const std::size_t rounded = (bytes + kAlignment - 1) / kAlignment * kAlignment;
  void* memory = std::aligned_alloc(kAlignment, rounded);
  if (memory == nullptr) return nullptr;
  std::memset(memory, 0, rounded);
  return Encode(memory);
}

void SimulatedMemory::Free(Device, void* memory) {
  std::free(HostAddress(static_cast<float*>(memory)));
}

void SimulatedMemory::Copy(void* to, Device to_device, const void* from, Device from_device,
                           std::size_t bytes) {
  if (!copy_error.empty()) throw std::runtime_error(copy_error);
  const bool to_sim = to_device.type == DeviceType::kSimulated;
  const bool from_sim = from_device.type == DeviceType::kSimulated;
  if (to_sim && from_sim) {
    on_device_.Add(bytes);
  } else if (to_sim) {
    to_device_.Add(bytes);
  } else if (from_sim) {
    to_host_.Add(bytes);
  }
  std::memcpy(HostAddress(static_cast<float*>(to)), HostAddress(static_cast<const float*>(from)),
              bytes);
}

absl::StatusOr<std::string> SimulatedMemory::Prepare(Device device) {
  if (device.index < 0 || device.index >= devices_) {
    return absl::FailedPreconditionError(DeviceName(device) + ": no such simulated device (" +
                                         std::to_string(devices_) + " registered)");
  }
  return DeviceName(device) + " (simulated: host memory the host may not touch)";
}

Traffic SimulatedMemory::traffic() const {
  return {to_device_.Read(), to_host_.Read(), on_device_.Read()};
}

void SimulatedMemory::ResetTraffic() {
  to_device_.Reset();
  to_host_.Reset();
  on_device_.Reset();
}

}  // namespace taas::sim
