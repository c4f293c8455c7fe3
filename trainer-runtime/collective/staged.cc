#include "taas/collective/staged.h"

#include <exception>
#include <mutex>
#include <string>
#include <vector>

namespace taas::collective {
namespace {

class Staged final : public DeviceCollective {
 public:
  Staged(Collective& cpu, Device device) : cpu_(cpu), device_(device) {}

  int rank() const override { return cpu_.rank(); }
  int size() const override { return cpu_.size(); }
  std::string Describe() const override {
    return cpu_.Describe() + ", staged through the host from " + DeviceName(device_);
  }

  Handle AllReduce(std::span<float> data, ReduceOp op) override {
    std::vector<float> host(data.size());
    absl::Status status = Move(host.data(), Device::Cpu(), data.data(), device_, data.size_bytes());
    if (status.ok()) status = cpu_.AllReduce(host, op).Wait();
    if (status.ok())
      status = Move(data.data(), device_, host.data(), Device::Cpu(), data.size_bytes());
    return Finished(status);
  }

  Handle Broadcast(std::span<std::byte> data, int root) override {
    std::vector<std::byte> host(data.size());
    absl::Status status = Move(host.data(), Device::Cpu(), data.data(), device_, data.size());
    if (status.ok()) status = cpu_.Broadcast(host, root).Wait();
    if (status.ok()) status = Move(data.data(), device_, host.data(), Device::Cpu(), data.size());
    return Finished(status);
  }

  void Abort(const absl::Status& status) override {
    std::lock_guard lock(mu_);
    if (failed_.ok()) failed_ = status.ok() ? absl::AbortedError("group aborted") : status;
  }

 private:
  absl::Status Move(void* to, Device to_device, const void* from, Device from_device,
                    std::size_t bytes) {
    {
      std::lock_guard lock(mu_);
      if (!failed_.ok()) return failed_;
    }
    if (bytes == 0) return absl::OkStatus();
    DeviceMemory* memory = MemoryFor(device_.type);
    if (memory == nullptr) {
      return absl::FailedPreconditionError("no memory is registered for " + DeviceName(device_));
    }
    try {
      memory->Copy(to, to_device, from, from_device, bytes);
    } catch (const std::exception& e) {
      return absl::InternalError("staging " + std::to_string(bytes) + " bytes between " +
                                 DeviceName(device_) + " and the host: " + e.what());
    }
    return absl::OkStatus();
  }

  Handle Finished(const absl::Status& status) {
    if (!status.ok()) Abort(status);
    return Handle(status);
  }

  Collective& cpu_;
  const Device device_;
  std::mutex mu_;
  absl::Status failed_;  // guarded by mu_
};

}  // namespace

std::unique_ptr<DeviceCollective> StageThroughHost(Collective& cpu, Device device) {
  return std::make_unique<Staged>(cpu, device);
}

}  // namespace taas::collective
