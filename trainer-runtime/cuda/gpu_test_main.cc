// The main of every `gpu` test (taas_add_gpu_test): without a visible CUDA device the test
// reports itself skipped through ctest's SKIP_RETURN_CODE instead of failing, so the build
// machines (no GPU) compile and list every GPU test, and a machine with GPUs runs them.
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>

#include <cstdio>
#include <cstdlib>

#include "taas/cuda/device.h"
#include "taas/cuda/testing.h"

int main(int argc, char** argv) {
  if (taas::cuda::VisibleDeviceCount() == 0) {
    std::printf(
        "no CUDA device visible (CUDA_VISIBLE_DEVICES=%s): skipped\n",
        std::getenv("CUDA_VISIBLE_DEVICES") ? std::getenv("CUDA_VISIBLE_DEVICES") : "unset");
    return taas::cuda::kSkipExitCode;
  }
  return doctest::Context(argc, argv).run();
}
