// Collectives over a device's memory (NCCL for CUDA), reached without depending on the device's
// code: the engine of a device registers a factory, as it registers its DeviceMemory
// (taas/tensor/device.h), and the runtime asks for one per model replica whose variables live on
// that device. A build without the device is the same code; it finds no factory.
#pragma once

#include <memory>

#include "taas/collective/collective.h"
#include "taas/tensor/device.h"

namespace taas::collective {

// A member of a group on devices: the collective.h contract, with buffers in the member's device
// memory, used in place (a backend may also take host buffers: each says how it moves them).
// Operations on device memory read their buffer after the work enqueued on the device before the
// call; AwaitOnDevice orders the device's later work after them.
class DeviceCollective : public Collective {
 public:
  // Fails every waiting and later operation with `status`, and ends what is in flight on the
  // device: a replica that cannot go on releases the others. Any thread, more than once.
  virtual void Abort(const absl::Status& status) = 0;
};

struct DeviceCollectiveOptions {
  Device device;              // this member's device
  double timeout_secs = 600;  // longest wait for the group to form and for any operation
};

// Forms this member's device collective over `cpu`, a group of the same members that already
// works (it carries what the device group needs to form; a backend may keep using it, so it
// outlives the device collective). Every member calls it from its own thread at the same time.
using DeviceCollectiveFactory = absl::StatusOr<std::unique_ptr<DeviceCollective>> (*)(
    Collective& cpu, const DeviceCollectiveOptions& options);

// Makes `factory` form the collectives of devices of `type` (not kCpu); returns the one it
// replaces (nullptr the first time). The device's engine calls this once, at start-up.
DeviceCollectiveFactory RegisterDeviceCollective(DeviceType type, DeviceCollectiveFactory factory);

// The factory registered for `type`; nullptr for kCpu (the CPU groups need none) and for a
// device whose engine is not in this build.
DeviceCollectiveFactory DeviceCollectiveFor(DeviceType type);

}  // namespace taas::collective
