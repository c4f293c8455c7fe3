// The main of every `gpu` test (taas_add_gpu_test): without a CUDA device the test reports itself
// skipped through ctest's SKIP_RETURN_CODE instead of failing, so the build machines (no GPU, no
// driver) compile and list every GPU test, and a machine with GPUs runs them. Devices that cannot
// be counted (a driver too old for this build, one that cannot start) fail the test instead: a
// GPU machine whose tests all "skipped" would pass for one that works.
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include "taas/contract/env.h"
#include "taas/cuda/device.h"
#include "taas/cuda/testing.h"

namespace {

// "NAME=value" or "NAME unset", for the skip line.
std::string Setting(std::string_view env) {
  const std::string name(env);
  const char* value = std::getenv(name.c_str());
  return value != nullptr ? name + "=" + value : name + " unset";
}

}  // namespace

int main(int argc, char** argv) {
  const absl::StatusOr<int> devices = taas::cuda::VisibleDeviceCount();
  if (!devices.ok()) {
    std::fprintf(stderr, "FAILED: the CUDA devices cannot be counted: %s\n",
                 devices.status().ToString().c_str());
    return 1;
  }
  if (*devices == 0) {
    std::printf("no CUDA device visible (%s, %s): skipped\n",
                Setting(taas::contract::kNvidiaVisibleDevicesEnv).c_str(),
                Setting(taas::contract::kCudaVisibleDevicesEnv).c_str());
    return taas::cuda::kSkipExitCode;
  }
  return doctest::Context(argc, argv).run();
}
