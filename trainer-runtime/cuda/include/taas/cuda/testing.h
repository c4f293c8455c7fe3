// For `gpu` tests (taas_add_gpu_test in cmake/TaasCuda.cmake links a main that exits with
// kSkipExitCode when no CUDA device is visible). A test that needs more than one device skips
// itself the same way from inside: `if (VisibleDeviceCount() < 2) std::exit(kSkipExitCode);`.
#pragma once

namespace taas::cuda {

// ctest's SKIP_RETURN_CODE for every `gpu` test (the automake convention).
inline constexpr int kSkipExitCode = 77;

}  // namespace taas::cuda
