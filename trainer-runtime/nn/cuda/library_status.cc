#include "library_status.h"

#include <string>

namespace taas::nn::cuda {

absl::Status CublasStatus(cublasStatus_t status, std::string_view what) {
  if (status == CUBLAS_STATUS_SUCCESS) return absl::OkStatus();
  std::string message = std::string(what) + ": " + cublasGetStatusName(status) + " (" +
                        cublasGetStatusString(status) + ")";
  if (status == CUBLAS_STATUS_ALLOC_FAILED) return absl::ResourceExhaustedError(message);
  return absl::InternalError(message);
}

absl::Status CudnnStatus(cudnnStatus_t status, std::string_view what) {
  if (status == CUDNN_STATUS_SUCCESS) return absl::OkStatus();
  // cuDNN 9 keeps the detail of the last error per thread; the status's own text is generic.
  char detail[512] = {};
  cudnnGetLastErrorString(detail, sizeof(detail));
  std::string message = std::string(what) + ": " + cudnnGetErrorString(status);
  if (detail[0] != '\0') message += " (" + std::string(detail) + ")";
  return absl::InternalError(message);
}

}  // namespace taas::nn::cuda
