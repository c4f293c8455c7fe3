#include "taas/sim_device/sim_device.h"

#include <atomic>
#include <mutex>
#include <string>
#include <vector>

#include "taas/collective/device_collective.h"
#include "taas/nn/device_kernels.h"
#include "taas/nn/host_kernels.h"
#include "taas/optim/device_rules.h"

namespace taas::sim {
namespace {

// A host tensor over the memory behind a device tensor.
Tensor Host(const Tensor& device_tensor) {
  return Tensor::View(HostAddress(device_tensor.data()), device_tensor.shape(), Device::Cpu());
}

// The CPU engine's kernels on the device's memory.
class Kernels final : public nn::DeviceKernels {
 public:
  absl::Status DenseForward(const Tensor& x, const Tensor& kernel, const Tensor& bias, bool relu,
                            Tensor& y) override {
    Tensor out = Host(y);
    return Cpu().DenseForward(Host(x), Host(kernel), Host(bias), relu, out);
  }
  absl::Status DenseBackward(const Tensor& x, const Tensor& kernel, const Tensor& dy,
                             Tensor& kernel_grad, Tensor& bias_grad, Tensor* dx) override {
    Tensor dk = Host(kernel_grad), db = Host(bias_grad);
    Tensor dx_host = dx != nullptr ? Host(*dx) : Tensor();
    return Cpu().DenseBackward(Host(x), Host(kernel), Host(dy), dk, db,
                               dx != nullptr ? &dx_host : nullptr);
  }
  absl::Status ConvForward(std::unique_ptr<nn::DeviceState>& state, const nn::ConvGeometry& g,
                           const Tensor& x, const Tensor& kernel, const Tensor& bias, bool relu,
                           Tensor& y) override {
    Tensor out = Host(y);
    return Cpu().ConvForward(state, g, Host(x), Host(kernel), Host(bias), relu, out);
  }
  absl::Status ConvBackward(std::unique_ptr<nn::DeviceState>& state, const nn::ConvGeometry& g,
                            const Tensor& x, const Tensor& kernel, const Tensor& dy,
                            Tensor& kernel_grad, Tensor& bias_grad, Tensor* dx) override {
    Tensor dk = Host(kernel_grad), db = Host(bias_grad);
    Tensor dx_host = dx != nullptr ? Host(*dx) : Tensor();
    return Cpu().ConvBackward(state, g, Host(x), Host(kernel), Host(dy), dk, db,
                              dx != nullptr ? &dx_host : nullptr);
  }
  absl::Status MaxPoolForward(std::unique_ptr<nn::DeviceState>& state, const nn::PoolGeometry& g,
                              const Tensor& x, Tensor& y) override {
    Tensor out = Host(y);
    return Cpu().MaxPoolForward(state, g, Host(x), out);
  }
  absl::Status MaxPoolBackward(std::unique_ptr<nn::DeviceState>& state, const nn::PoolGeometry& g,
                               const Tensor& x, const Tensor& y, const Tensor& dy,
                               Tensor& dx) override {
    Tensor out = Host(dx);
    return Cpu().MaxPoolBackward(state, g, Host(x), Host(y), Host(dy), out);
  }
  absl::Status Relu(const Tensor& x, Tensor& y) override {
    Tensor out = Host(y);
    return Cpu().Relu(Host(x), out);
  }
  absl::Status ReluMask(const Tensor& y, const Tensor& dy, Tensor& out) override {
    Tensor masked = Host(out);
    return Cpu().ReluMask(Host(y), Host(dy), masked);
  }
  absl::Status Dropout(const Tensor& x, float rate, std::uint64_t seed, Tensor& mask,
                       Tensor& y) override {
    Tensor m = Host(mask), out = Host(y);
    return Cpu().Dropout(Host(x), rate, seed, m, out);
  }
  absl::Status Multiply(const Tensor& a, const Tensor& b, Tensor& out) override {
    Tensor product = Host(out);
    return Cpu().Multiply(Host(a), Host(b), product);
  }
  absl::Status Copy(const Tensor& from, Tensor& to) override {
    Tensor out = Host(to);
    return Cpu().Copy(Host(from), out);
  }
  absl::Status SoftmaxCrossEntropy(const Tensor& logits, std::span<const std::int32_t> labels,
                                   Tensor& grad, Tensor& stats) override {
    Tensor g = Host(grad), s = Host(stats);
    return Cpu().SoftmaxCrossEntropy(Host(logits), labels, g, s);
  }
  absl::Status AddSumOfSquares(const Tensor& x, float scale, Tensor& total) override {
    Tensor out = Host(total);
    return Cpu().AddSumOfSquares(Host(x), scale, out);
  }
  absl::Status Axpy(float alpha, const Tensor& x, Tensor& y) override {
    Tensor out = Host(y);
    return Cpu().Axpy(alpha, Host(x), out);
  }

 private:
  static nn::DeviceKernels& Cpu() { return nn::HostKernels(); }
};

// The host's update rules on the device's memory.
class Rules final : public optim::DeviceUpdateRules {
 public:
  absl::Status Sgd(float lr, Tensor& var, const Tensor& grad) override {
    Tensor v = Host(var);
    return Cpu().Sgd(lr, v, Host(grad));
  }
  absl::Status Momentum(float lr, float momentum, bool nesterov, Tensor& var, const Tensor& grad,
                        Tensor& accum) override {
    Tensor v = Host(var), a = Host(accum);
    return Cpu().Momentum(lr, momentum, nesterov, v, Host(grad), a);
  }
  absl::Status Adam(float lr_t, float beta1, float beta2, float epsilon, Tensor& var,
                    const Tensor& grad, Tensor& m, Tensor& v) override {
    Tensor w = Host(var), m_host = Host(m), v_host = Host(v);
    return Cpu().Adam(lr_t, beta1, beta2, epsilon, w, Host(grad), m_host, v_host);
  }
  absl::Status RmsProp(float lr, float rho, float momentum, float epsilon, Tensor& var,
                       const Tensor& grad, Tensor& velocity, Tensor* momentum_slot,
                       Tensor* average_grad) override {
    Tensor w = Host(var), velocity_host = Host(velocity);
    Tensor momentum_host = momentum_slot != nullptr ? Host(*momentum_slot) : Tensor();
    Tensor average_host = average_grad != nullptr ? Host(*average_grad) : Tensor();
    return Cpu().RmsProp(lr, rho, momentum, epsilon, w, Host(grad), velocity_host,
                         momentum_slot != nullptr ? &momentum_host : nullptr,
                         average_grad != nullptr ? &average_host : nullptr);
  }
  absl::Status Adagrad(float lr, float offset, Tensor& var, const Tensor& grad,
                       Tensor& accum) override {
    Tensor w = Host(var), a = Host(accum);
    return Cpu().Adagrad(lr, offset, w, Host(grad), a);
  }
  absl::Status Decay(float rate, Tensor& var) override {
    Tensor w = Host(var);
    return Cpu().Decay(rate, w);
  }
  absl::Status ClipByGlobalNorm(float clip_norm, std::span<Tensor* const> tensors) override {
    std::vector<Tensor> views;
    views.reserve(tensors.size());
    std::vector<Tensor*> pointers;
    for (const Tensor* tensor : tensors) pointers.push_back(&views.emplace_back(Host(*tensor)));
    return Cpu().ClipByGlobalNorm(clip_norm, pointers);
  }

 private:
  static optim::DeviceUpdateRules& Cpu() { return optim::HostUpdateRules(); }
};

// A member of the device's group: the CPU group's operations on the memory behind the device's
// buffers, in place. The CPU group outlives it (the runtime keeps it for its host values).
class Member final : public collective::DeviceCollective {
 public:
  Member(collective::Collective& cpu, Device device) : cpu_(cpu), device_(device) {}

  int rank() const override { return cpu_.rank(); }
  int size() const override { return cpu_.size(); }
  std::string Describe() const override {
    return "simulated device group on " + DeviceName(device_) + " over " + cpu_.Describe();
  }

  collective::Handle AllReduce(std::span<float> data, collective::ReduceOp op) override {
    if (absl::Status usable = Usable(data.data()); !usable.ok()) return collective::Handle(usable);
    return cpu_.AllReduce({HostAddress(data.data()), data.size()}, op);
  }

  collective::Handle Broadcast(std::span<std::byte> data, int root) override {
    if (absl::Status usable = Usable(data.data()); !usable.ok()) return collective::Handle(usable);
    auto* host = reinterpret_cast<std::byte*>(HostAddress(reinterpret_cast<float*>(data.data())));
    return cpu_.Broadcast({host, data.size()}, root);
  }

  void Abort(const absl::Status& status) override {
    std::lock_guard lock(mu_);
    if (aborted_.ok()) aborted_ = status.ok() ? absl::AbortedError("group aborted") : status;
  }

 private:
  // The group carries device buffers only (host values go over the CPU group itself).
  absl::Status Usable(const void* data) {
    {
      std::lock_guard lock(mu_);
      if (!aborted_.ok()) return aborted_;
    }
    if (data != nullptr && !IsDeviceAddress(data)) {
      return absl::InvalidArgumentError("the " + DeviceName(device_) +
                                        " group was given a host buffer: it carries the device's "
                                        "memory only");
    }
    return absl::OkStatus();
  }

  collective::Collective& cpu_;
  const Device device_;
  std::mutex mu_;
  absl::Status aborted_;  // guarded by mu_
};

absl::StatusOr<std::unique_ptr<collective::DeviceCollective>> FormGroup(
    collective::Collective& cpu, const collective::DeviceCollectiveOptions& options) {
  return std::unique_ptr<collective::DeviceCollective>(new Member(cpu, options.device));
}

}  // namespace

struct SimulatedDevices::Engine {
  Kernels kernels;
  Rules rules;
  nn::DeviceKernels* previous_kernels = nullptr;
  optim::DeviceUpdateRules* previous_rules = nullptr;
  collective::DeviceCollectiveFactory previous_collective = nullptr;
};

SimulatedDevices::SimulatedDevices(int devices)
    : memory_(devices), engine_(std::make_unique<Engine>()) {
  engine_->previous_kernels = nn::RegisterDeviceKernels(DeviceType::kSimulated, &engine_->kernels);
  engine_->previous_rules =
      optim::RegisterDeviceUpdateRules(DeviceType::kSimulated, &engine_->rules);
  engine_->previous_collective =
      collective::RegisterDeviceCollective(DeviceType::kSimulated, &FormGroup);
}

SimulatedDevices::~SimulatedDevices() {
  collective::RegisterDeviceCollective(DeviceType::kSimulated, engine_->previous_collective);
  optim::RegisterDeviceUpdateRules(DeviceType::kSimulated, engine_->previous_rules);
  nn::RegisterDeviceKernels(DeviceType::kSimulated, engine_->previous_kernels);
}

}  // namespace taas::sim
