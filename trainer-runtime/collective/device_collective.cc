#include "taas/collective/device_collective.h"

#include "taas/tensor/device_slot.h"

namespace taas::collective {
namespace {

DeviceSlot<DeviceCollectiveFactory> device_factories;

}  // namespace

DeviceCollectiveFactory RegisterDeviceCollective(DeviceType type, DeviceCollectiveFactory factory) {
  return device_factories.Exchange(type, factory);
}

DeviceCollectiveFactory DeviceCollectiveFor(DeviceType type) { return device_factories.Get(type); }

}  // namespace taas::collective
