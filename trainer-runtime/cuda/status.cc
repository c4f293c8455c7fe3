#include "taas/cuda/status.h"

#include <string>

namespace taas::cuda {

absl::Status CudaStatus(cudaError_t error, std::string_view what) {
  if (error == cudaSuccess) return absl::OkStatus();
  // A failed call leaves the error as the thread's last one; clearing it keeps a later check of
  // cudaGetLastError (after a kernel launch) from reporting this one again.
  (void)cudaGetLastError();
  std::string message = std::string(what) + ": CUDA " + cudaGetErrorName(error) + " (" +
                        cudaGetErrorString(error) + ")";
  switch (error) {
    case cudaErrorMemoryAllocation:
      return absl::ResourceExhaustedError(message);
    case cudaErrorNoDevice:
    case cudaErrorInsufficientDriver:
    case cudaErrorNoKernelImageForDevice:
    case cudaErrorUnsupportedPtxVersion:
    case cudaErrorInvalidDevice:
      return absl::FailedPreconditionError(message);
    default:
      return absl::InternalError(message);
  }
}

}  // namespace taas::cuda
