// The CUDA device's memory: a caching allocator (no managed memory), pinned host staging
// buffers and copies on streams, registered as taas::DeviceMemory for DeviceType::kCuda by
// linking taas::cuda (register.cc, linked whole), before main; registering touches no device,
// so a binary with CUDA runs on a machine without a GPU. Needs no CUDA headers.
#pragma once

#include <cstddef>

#include "taas/base/status.h"
#include "taas/tensor/device.h"

namespace taas::cuda {

// The process's CUDA memory (the one register.cc registers); lives as long as the process.
DeviceMemory& Memory();

// What the allocator of device `ordinal` holds, for logs and tests.
struct MemoryStats {
  std::size_t in_use_bytes = 0;
  std::size_t cached_bytes = 0;
  std::size_t peak_in_use_bytes = 0;
  std::size_t device_allocations = 0;  // cudaMalloc calls
  std::size_t reuses = 0;              // requests served from the cache
  // Copies through the DeviceMemory seam (what the runtime and tensors move) between the host and
  // this device, each way, and their bytes: a step that keeps its state on the device moves none
  // between the steps that log.
  std::size_t to_host_copies = 0;
  std::size_t to_host_bytes = 0;
  std::size_t to_device_copies = 0;
  std::size_t to_device_bytes = 0;
};
absl::StatusOr<MemoryStats> StatsOf(int ordinal);

// Bytes each of a device's two pinned staging buffers holds: a copy larger than this is cut into
// pieces, one piece moving between pageable memory and a buffer while the other moves over PCIe.
inline constexpr std::size_t kStagingBytes = std::size_t{4} << 20;

}  // namespace taas::cuda
