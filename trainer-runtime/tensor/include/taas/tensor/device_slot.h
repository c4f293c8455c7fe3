// What an engine registers for a device type other than the host — its memory (device.h), its
// layer kernels (nn), its update rules (optim), its collective (collective) — kept the same way:
// one slot per type, set once at start-up (typically before main, by linking the engine), read
// from any thread. The host has no slot: its implementations are built in, and a registration for
// kCpu is refused (returns the empty value and changes nothing).
#pragma once

#include <atomic>

#include "taas/tensor/device.h"

namespace taas {

// `T` is a pointer (to an interface, or a factory function); empty means "none registered".
template <typename T>
class DeviceSlot {
 public:
  // What is registered for `type`; empty for the host and for a type nobody registered.
  T Get(DeviceType type) const { return type == DeviceType::kCpu ? T{} : cuda_.load(); }
  // Registers `value` for `type` and returns what it replaces (empty the first time, and always
  // for the host, which is left as it is).
  T Exchange(DeviceType type, T value) {
    return type == DeviceType::kCpu ? T{} : cuda_.exchange(value);
  }

 private:
  // The only device type besides the host is kCuda.
  std::atomic<T> cuda_{};
};

}  // namespace taas
