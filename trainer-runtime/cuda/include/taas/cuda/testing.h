// For `gpu` tests (taas_add_gpu_test in cmake/TaasCuda.cmake links a main that exits with
// kSkipExitCode when no CUDA device is visible, and fails when the devices cannot be counted). A
// test that needs more than one device returns early from inside: `if (VisibleGpus() < 2)
// return;`.
#pragma once

#include "taas/cuda/device.h"

namespace taas::cuda {

// ctest's SKIP_RETURN_CODE for every `gpu` test (the automake convention).
inline constexpr int kSkipExitCode = 77;

// The visible devices, inside a gpu test (whose main already failed when they cannot be
// counted).
inline int VisibleGpus() { return VisibleDeviceCount().value_or(0); }

}  // namespace taas::cuda
