// Private to taas::cuda: VisibleDeviceCount's decision (device.h), apart from the CUDA calls that
// feed it, so that it is tested on machines without a GPU or a driver.
#pragma once

#include <cuda_runtime_api.h>

#include "taas/base/status.h"

namespace taas::cuda {

// What cudaGetDeviceCount's `error` and `count` mean, given cudaDriverGetVersion's
// `driver_version` (0: no NVIDIA driver installed) and cudaRuntimeGetVersion's
// `runtime_version` (both 1000 * major + 10 * minor): the device count, or the error
// VisibleDeviceCount documents.
absl::StatusOr<int> DeviceCountFrom(cudaError_t error, int count, int driver_version,
                                    int runtime_version);

}  // namespace taas::cuda
