#include "taas/cuda/device.h"

#include <cuda_runtime_api.h>

#include <string>

#include "device_count.h"
#include "probe.h"
#include "taas/contract/env.h"
#include "taas/cuda/status.h"
#include "taas/cuda/stream.h"

namespace taas::cuda {
namespace {

// "13.0" for CUDA's 13000.
std::string CudaVersion(int version) {
  return std::to_string(version / 1000) + "." + std::to_string(version % 1000 / 10);
}

// What to do about `error` (not cudaSuccess or cudaErrorNoDevice) with a driver installed.
std::string FixFor(cudaError_t error, int driver_version, int runtime_version) {
  const std::string versions = "the node's NVIDIA driver supports CUDA " +
                               CudaVersion(driver_version) + ", this binary's CUDA runtime is " +
                               CudaVersion(runtime_version);
  if (error == cudaErrorInsufficientDriver) {
    return versions + ": install an NVIDIA driver for CUDA " + CudaVersion(runtime_version) +
           " or newer on the node (CUDA 13 needs driver 580 or later)";
  }
  return versions + ": the driver cannot give this process its GPUs; check the node with " +
         "nvidia-smi, that the container was given them (" +
         std::string(contract::kNvidiaVisibleDevicesEnv) +
         ", which NVIDIA's device plugin sets, and the /dev/nvidia* devices it exposes) and that " +
         std::string(contract::kCudaVisibleDevicesEnv) + ", when set, names visible ones";
}

}  // namespace

absl::StatusOr<int> DeviceCountFrom(cudaError_t error, int count, int driver_version,
                                    int runtime_version) {
  if (error == cudaSuccess) return count;
  // No device, or no driver at all (nothing to load: the CUDA runtime then says the driver is
  // insufficient): a machine without GPUs.
  if (error == cudaErrorNoDevice || driver_version == 0) return 0;
  return absl::FailedPreconditionError(
      "counting the CUDA devices: CUDA " + std::string(cudaGetErrorName(error)) + " (" +
      cudaGetErrorString(error) + "); " + FixFor(error, driver_version, runtime_version));
}

absl::StatusOr<int> VisibleDeviceCount() {
  int count = 0;
  const cudaError_t error = cudaGetDeviceCount(&count);
  (void)cudaGetLastError();  // a failed call leaves its error as the thread's last one
  int driver_version = 0, runtime_version = 0;
  // Each sets 0 when it cannot tell (no driver installed); neither fails otherwise.
  (void)cudaDriverGetVersion(&driver_version);
  (void)cudaRuntimeGetVersion(&runtime_version);
  return DeviceCountFrom(error, count, driver_version, runtime_version);
}

absl::StatusOr<std::string> DescribeDevice(int ordinal) {
  cudaDeviceProp prop{};
  TAAS_CUDA_RETURN_IF_ERROR(cudaGetDeviceProperties(&prop, ordinal),
                            "cuda:" + std::to_string(ordinal) + ": reading its properties");
  return std::string(prop.name) + " (sm_" + std::to_string(prop.major) +
         std::to_string(prop.minor) + ", " + std::to_string(prop.totalGlobalMem >> 30) + " GiB)";
}

absl::Status ProbeDevice(int ordinal) {
  const std::string name = "cuda:" + std::to_string(ordinal);
  ScopedDevice device(ordinal);  // the caller's current device is left as it was
  TAAS_RETURN_IF_ERROR(device.status());
  void* flag = nullptr;
  TAAS_CUDA_RETURN_IF_ERROR(cudaMalloc(&flag, sizeof(int)), name + ": allocating the probe");
  absl::Status status = CudaStatus(LaunchProbe(static_cast<int*>(flag), nullptr),
                                   name +
                                       ": launching the probe kernel (this binary holds code "
                                       "for the CUDA architectures " TAAS_CUDA_ARCHITECTURES ")");
  if (status.ok()) status = CudaStatus(cudaDeviceSynchronize(), name + ": running the probe");
  (void)cudaFree(flag);
  return status;
}

}  // namespace taas::cuda
