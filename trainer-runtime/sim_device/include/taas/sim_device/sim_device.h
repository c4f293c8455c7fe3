// The simulated device whole: its memory (memory.h), the CPU engine's kernels and the host's
// update rules run on that memory, and its collective, registered for DeviceType::kSimulated as
// a GPU engine registers its own for kCuda. A model, the runtime and the collectives then run on
// "sim:N" exactly as on a GPU, with the host's arithmetic (so results equal the CPU path's bit for
// bit) and with every copy between the device and the host counted: what CI can prove of the
// device path without a GPU.
//
// The collective: a group over the device's memory formed over the replicas' CPU group (the
// in-process group of a worker, the TCP ring across workers), which carries the device's buffers
// in place, as NCCL does a GPU's.
//
// For tests only (memory.h says how that is kept).
#pragma once

#include <memory>

#include "taas/sim_device/memory.h"

namespace taas::sim {

// Registers the device's memory, kernels, update rules and collective for its lifetime (one at a
// time; restores what was registered before).
class SimulatedDevices {
 public:
  explicit SimulatedDevices(int devices = 2);
  ~SimulatedDevices();
  SimulatedDevices(const SimulatedDevices&) = delete;
  SimulatedDevices& operator=(const SimulatedDevices&) = delete;

  SimulatedMemory& memory() { return memory_; }
  Traffic traffic() const { return memory_.traffic(); }

 private:
  struct Engine;
  SimulatedMemory memory_;
  std::unique_ptr<Engine> engine_;
};

}  // namespace taas::sim
