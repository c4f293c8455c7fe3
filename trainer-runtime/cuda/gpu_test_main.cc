// The main of every `gpu` test (taas_add_gpu_test): without a visible CUDA device the test
// reports itself skipped through ctest's SKIP_RETURN_CODE instead of failing, so the build
// machines (no GPU) compile and list every GPU test, and a machine with GPUs runs them.
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>

#include <cstdio>
#include <cstdlib>
#include <string>

#include "taas/contract/env.h"
#include "taas/cuda/device.h"
#include "taas/cuda/testing.h"

int main(int argc, char** argv) {
  if (taas::cuda::VisibleDeviceCount() == 0) {
    const std::string name(taas::contract::kCudaVisibleDevicesEnv);
    const char* visible = std::getenv(name.c_str());
    std::printf("no CUDA device visible (%s=%s): skipped\n", name.c_str(),
                visible != nullptr ? visible : "unset");
    return taas::cuda::kSkipExitCode;
  }
  return doctest::Context(argc, argv).run();
}
