#include "taas/nn/device_kernels.h"

#include <atomic>

namespace taas::nn {
namespace {

// One slot, as the core's device memory has: the only device type besides the host is kCuda.
std::atomic<DeviceKernels*> cuda_kernels{nullptr};

}  // namespace

DeviceKernels* KernelsFor(DeviceType type) {
  return type == DeviceType::kCuda ? cuda_kernels.load() : nullptr;
}

DeviceKernels* RegisterDeviceKernels(DeviceType type, DeviceKernels* kernels) {
  return type == DeviceType::kCuda ? cuda_kernels.exchange(kernels) : nullptr;
}

}  // namespace taas::nn
