// cuBLAS and cuDNN results as absl::Status: the one converter of each error domain (the CUDA
// runtime's is taas/cuda/status.h). Includes CUDA's headers: private to trainer-runtime/nn/cuda/.
#pragma once

#include <cublas_v2.h>
#include <cudnn.h>

#include <string_view>

#include "taas/base/status.h"

namespace taas::nn::cuda {

// OK for success; else an error naming `what` (the call), the library's name and text for the
// result: Internal, or for cuBLAS's failed allocation ResourceExhausted (cuDNN allocates no device
// memory here: its workspace comes from the engine).
absl::Status CublasStatus(cublasStatus_t status, std::string_view what);
absl::Status CudnnStatus(cudnnStatus_t status, std::string_view what);

}  // namespace taas::nn::cuda

// TAAS_CUBLAS_RETURN_IF_ERROR(cublasSgemm(...), "cublasSgemm (x W)") returns the error from the
// enclosing function; TAAS_CUDNN_RETURN_IF_ERROR likewise.
#define TAAS_CUBLAS_RETURN_IF_ERROR(call, what) \
  TAAS_RETURN_IF_ERROR(::taas::nn::cuda::CublasStatus((call), (what)))
#define TAAS_CUDNN_RETURN_IF_ERROR(call, what) \
  TAAS_RETURN_IF_ERROR(::taas::nn::cuda::CudnnStatus((call), (what)))
