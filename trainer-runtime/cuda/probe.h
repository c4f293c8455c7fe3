// The smallest kernel launch (probe.cu), for device discovery: a device the binary holds no code
// for fails here, at start-up, with a clear message instead of in the first layer.
#pragma once

#include <cuda_runtime_api.h>

namespace taas::cuda {

// Writes 1 to *out (device memory) on `stream`; returns the launch's error.
cudaError_t LaunchProbe(int* out, cudaStream_t stream);

}  // namespace taas::cuda
