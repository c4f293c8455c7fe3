// Where a tensor's elements live. The core knows one device, the host (kCpu), and holds no code of
// any other: an engine for another device (the CUDA engine, taas::cuda) implements DeviceMemory and
// registers it, and tensors on that device then allocate, free and copy through it. Adding a device
// touches neither the core nor the parameter servers, which exchange host tensors.
#pragma once

#include <cstddef>
#include <string>

#include "taas/base/status.h"

namespace taas {

// kSimulated is the test device (taas::sim_device, linked only by tests): host memory the rest of
// the program cannot dereference, so that a test proves a step stays on its device without a GPU.
// No job configuration names it (TAAS_DEVICE takes cpu or cuda), and no shipped binary links it.
enum class DeviceType { kCpu, kCuda, kSimulated };

// The device types besides the host, for registries that keep one entry per type (device_slot.h).
inline constexpr DeviceType kNonHostDeviceTypes[] = {DeviceType::kCuda, DeviceType::kSimulated};

struct Device {
  DeviceType type = DeviceType::kCpu;
  int index = 0;  // which device of its type (a CUDA ordinal); 0 for the host

  static constexpr Device Cpu() { return {}; }
  bool is_cpu() const { return type == DeviceType::kCpu; }
  bool operator==(const Device&) const = default;
};

// "cpu", "cuda:1", "sim:0": for messages and the startup line.
std::string DeviceName(Device device);

// The memory of the devices of one type.
class DeviceMemory {
 public:
  virtual ~DeviceMemory() = default;
  // `bytes` (> 0) of zeroed memory on `device`, aligned to 64 bytes at least; nullptr when the
  // device has no more.
  virtual void* Allocate(Device device, std::size_t bytes) = 0;
  virtual void Free(Device device, void* memory) = 0;
  // Copies `bytes` from `from` on `from_device` to `to` on `to_device`; one of them is this
  // memory's device type, the other the same or the host.
  virtual void Copy(void* to, Device to_device, const void* from, Device from_device,
                    std::size_t bytes) = 0;

  // For the runtime's device choice, so that it reaches a device only through this seam:
  // how many devices of this type the process may use (CUDA: those CUDA_VISIBLE_DEVICES or the
  // NVIDIA device plugin's NVIDIA_VISIBLE_DEVICES leave visible); 0 when there is none. A driver
  // that cannot answer (too old for this build, not loaded) is an error naming it and the fix,
  // not "no device": a job on a GPU node must not quietly train on its CPU.
  virtual absl::StatusOr<int> DeviceCount() { return 0; }
  // Readies `device` for tensors and checks it can run the engine's code, once, at start-up;
  // returns what the startup line says of it ("NVIDIA H100 80GB HBM3 (sm_90, 79 GiB)"), or a
  // permanent (kFailedPrecondition) error naming the device and the fix.
  virtual absl::StatusOr<std::string> Prepare(Device device) { return DeviceName(device); }
};

// The memory of devices of `type`: the host's for kCpu, always; for another type the one its
// engine registered, else nullptr.
DeviceMemory* MemoryFor(DeviceType type);

// Makes `memory` (not owned; it must outlive every tensor on its devices) manage the devices of
// `type`, which is not kCpu; returns the one it replaces (nullptr the first time). An engine calls
// this once, at start-up, before any tensor is placed on its devices.
DeviceMemory* RegisterDeviceMemory(DeviceType type, DeviceMemory* memory);

// How many threads the host's compute (a CPU engine's kernels) may use per model replica,
// process-wide; 0 leaves it to the engine (all cores). The runtime sets it at start-up
// (TAAS_COMPUTE_THREADS, else the CPUs the process may use shared among its model replicas); a
// model may set it again in build_model; the CPU engine applies it on every thread before it
// computes. Here, in the core, so that the runtime chooses without depending on an engine.
void SetHostComputeThreads(int threads);
int HostComputeThreads();

}  // namespace taas
