#include "taas/nn/device_kernels.h"

#include "taas/nn/host_kernels.h"
#include "taas/tensor/device_slot.h"

namespace taas::nn {
namespace {

DeviceSlot<DeviceKernels*> device_kernels;

}  // namespace

DeviceKernels* KernelsFor(DeviceType type) {
  return type == DeviceType::kCpu ? &HostKernels() : device_kernels.Get(type);
}

DeviceKernels* RegisterDeviceKernels(DeviceType type, DeviceKernels* kernels) {
  return device_kernels.Exchange(type, kernels);
}

}  // namespace taas::nn
