// Registers the CUDA memory for DeviceType::kCuda when the process starts. Linked whole into
// every binary that links taas::cuda (a static initializer in a static library would be dropped
// by the linker: nothing refers to it). Touches no device.
#include "taas/cuda/memory.h"
#include "taas/cuda/nccl_collective.h"

namespace {

[[maybe_unused]] const bool registered = [] {
  taas::RegisterDeviceMemory(taas::DeviceType::kCuda, &taas::cuda::Memory());
  taas::cuda::RegisterNcclCollective();
  return true;
}();

}  // namespace
