// CUDA runtime results as absl::Status: the one converter of that error domain (cuBLAS, cuDNN
// and NCCL results have theirs beside the code that calls them). Includes CUDA's headers: only
// trainer-runtime/cuda/ and trainer-runtime/nn/cuda/ may include this.
#pragma once

#include <cuda_runtime_api.h>

#include <string_view>

#include "taas/base/status.h"

namespace taas::cuda {

// OK for cudaSuccess; otherwise an error naming `what` (the call and its object), CUDA's name and
// text for `error`. Out of memory is kResourceExhausted; no device, no driver, a driver too old
// and a device our code was not compiled for are kFailedPrecondition (permanent: a rerun on the
// same machine fails the same); the rest kInternal.
absl::Status CudaStatus(cudaError_t error, std::string_view what);

}  // namespace taas::cuda

// Returns the CUDA runtime call's error from the enclosing function: TAAS_CUDA_RETURN_IF_ERROR(
// cudaMemsetAsync(p, 0, n, stream), "zeroing a block"). Also takes the call's sticky error state
// out of the thread, as CUDA's samples' checks do not.
#define TAAS_CUDA_RETURN_IF_ERROR(call, what) \
  TAAS_RETURN_IF_ERROR(::taas::cuda::CudaStatus((call), (what)))
