// What an engine registers for a device type other than the host — its memory (device.h), its
// layer kernels (nn), its update rules (optim), its collective (collective) — kept the same way:
// one slot per type, set once at start-up (typically before main, by linking the engine), read
// from any thread. The host has no slot: its implementations are built in, and a registration for
// kCpu is refused (returns the empty value and changes nothing).
#pragma once

#include <array>
#include <atomic>
#include <cstddef>

#include "taas/tensor/device.h"

namespace taas {

// `T` is a pointer (to an interface, or a factory function); empty means "none registered".
template <typename T>
class DeviceSlot {
 public:
  // What is registered for `type`; empty for the host and for a type nobody registered.
  T Get(DeviceType type) const {
    return type == DeviceType::kCpu ? T{} : slots_[Index(type)].load();
  }
  // Registers `value` for `type` and returns what it replaces (empty the first time, and always
  // for the host, which is left as it is).
  T Exchange(DeviceType type, T value) {
    return type == DeviceType::kCpu ? T{} : slots_[Index(type)].exchange(value);
  }

 private:
  static std::size_t Index(DeviceType type) { return static_cast<std::size_t>(type) - 1; }
  static_assert(static_cast<int>(DeviceType::kCpu) == 0 &&
                    static_cast<int>(kNonHostDeviceTypes[0]) == 1 &&
                    static_cast<int>(kNonHostDeviceTypes[1]) == 2,
                "Index() maps the device types after kCpu onto 0, 1, ...");

  // One per entry of kNonHostDeviceTypes (kCpu is 0, the others follow it).
  std::array<std::atomic<T>, std::size(kNonHostDeviceTypes)> slots_{};
};

}  // namespace taas
