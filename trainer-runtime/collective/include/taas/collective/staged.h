// A device collective made of a CPU group: device buffers are copied to the host, reduced or
// broadcast there, and copied back, each operation finished before its call returns. What
// all-reduce training falls back to when its replicas share no group over their devices' memory
// (a job whose workers are not all on devices whose engine forms one), at the cost of two copies
// per operation; a device's own group (NCCL) carries the buffers in place instead.
#pragma once

#include <memory>

#include "taas/collective/device_collective.h"

namespace taas::collective {

// Operations of `cpu` (which outlives the result) on buffers in the memory of `device`.
std::unique_ptr<DeviceCollective> StageThroughHost(Collective& cpu, Device device);

}  // namespace taas::collective
