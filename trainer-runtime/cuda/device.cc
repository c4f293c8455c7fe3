#include "taas/cuda/device.h"

#include <cuda_runtime_api.h>

#include <string>

#include "probe.h"
#include "taas/cuda/status.h"
#include "taas/cuda/stream.h"

namespace taas::cuda {

int VisibleDeviceCount() {
  int count = 0;
  // No driver or no device is an error to CUDA and an answer here: none.
  if (cudaGetDeviceCount(&count) != cudaSuccess) {
    (void)cudaGetLastError();
    return 0;
  }
  return count;
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
  absl::Status status = CudaStatus(
      LaunchProbe(static_cast<int*>(flag), nullptr),
      name + ": launching the probe kernel (this binary holds code for sm_80 and sm_90)");
  if (status.ok()) status = CudaStatus(cudaDeviceSynchronize(), name + ": running the probe");
  (void)cudaFree(flag);
  return status;
}

}  // namespace taas::cuda
