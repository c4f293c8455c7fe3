// The memory of the simulated device (DeviceType::kSimulated, "sim:N"): the test device that
// proves, on machines without a GPU, that a step keeps its state on its device.
//
// Its memory is host memory behind addresses the host cannot use: a tensor's data() on sim:N is
// the real address with its top bits flipped (a non-canonical x86-64 address), so any code that
// reads or writes a device tensor from the host crashes at once instead of working by accident,
// as it would on memory registered as a GPU's. Only the device's own code (its kernels, update
// rules and collective: sim_device.h) turns such an address back into a host one. Every copy
// through the device's memory is counted by direction, with its bytes.
//
// For tests only: linked by test binaries, never installed or linked by a shipped one (the
// include-graph check's link rules), and no job configuration can name the device.
#pragma once

#include <atomic>
#include <cstdint>
#include <ostream>
#include <string>

#include "taas/tensor/device.h"

namespace taas::sim {

// Copies of one direction since the memory was registered or last reset.
struct CopyCount {
  std::int64_t copies = 0;
  std::int64_t bytes = 0;
  bool operator==(const CopyCount&) const = default;
};

// "3 copies, 96 bytes", for test failures.
inline std::ostream& operator<<(std::ostream& out, const CopyCount& count) {
  return out << count.copies << " copies, " << count.bytes << " bytes";
}

struct Traffic {
  CopyCount to_device;  // host -> sim
  CopyCount to_host;    // sim -> host
  CopyCount on_device;  // sim -> sim (the same device or another)
};

// Registers itself as the memory of kSimulated for its lifetime (one at a time; restores what was
// registered before). Thread-safe, but for the test knobs, which are set before use.
class SimulatedMemory final : public DeviceMemory {
 public:
  explicit SimulatedMemory(int devices = 2);
  ~SimulatedMemory() override;
  SimulatedMemory(const SimulatedMemory&) = delete;
  SimulatedMemory& operator=(const SimulatedMemory&) = delete;

  void* Allocate(Device device, std::size_t bytes) override;
  void Free(Device device, void* memory) override;
  void Copy(void* to, Device to_device, const void* from, Device from_device,
            std::size_t bytes) override;
  absl::StatusOr<int> DeviceCount() override { return devices_; }
  absl::StatusOr<std::string> Prepare(Device device) override;

  Traffic traffic() const;
  void ResetTraffic();

  // Test knobs: `full` makes allocations fail as a full device's do; a non-empty `copy_error`
  // makes copies throw it as a failing device's do.
  bool full = false;
  std::string copy_error;

 private:
  struct Counter {
    std::atomic<std::int64_t> copies{0};
    std::atomic<std::int64_t> bytes{0};
    void Add(std::size_t n);
    CopyCount Read() const;
    void Reset();
  };

  const int devices_;
  DeviceMemory* previous_;
  Counter to_device_, to_host_, on_device_;
};

// The host address behind an address of the simulated device's memory (identity for any other
// address): for the device's own code only.
float* HostAddress(const float* device_address);
// Whether `address` is one of the simulated device's.
bool IsDeviceAddress(const void* address);

}  // namespace taas::sim
