// The torch engine in a build without CUDA: the CPU only.
#include "device_stream.h"

namespace taas::torch_engine {
namespace {

absl::Status CpuOnly(Device device) {
  if (device.is_cpu()) return absl::OkStatus();
  return absl::FailedPreconditionError(
      "this taas was built without CUDA: a torch model cannot use " + DeviceName(device) +
      "; set TAAS_DEVICE=cpu, or build taas with CUDA (docs/trainer-runtime.md, GPUs)");
}

}  // namespace

absl::Status LoadBackend(Device device) { return CpuOnly(device); }
absl::Status UseComputeStream(Device device) { return CpuOnly(device); }

}  // namespace taas::torch_engine
