#include "taas/collective/device_collective.h"

#include <atomic>

namespace taas::collective {
namespace {

std::atomic<DeviceCollectiveFactory> cuda_factory{nullptr};

}  // namespace

DeviceCollectiveFactory RegisterDeviceCollective(DeviceType type, DeviceCollectiveFactory factory) {
  if (type == DeviceType::kCpu) return nullptr;
  return cuda_factory.exchange(factory);
}

DeviceCollectiveFactory DeviceCollectiveFor(DeviceType type) {
  return type == DeviceType::kCpu ? nullptr : cuda_factory.load();
}

}  // namespace taas::collective
