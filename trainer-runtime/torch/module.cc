#include "taas/torch/module.h"

#include <torch/csrc/autograd/function_hook.h>
#include <torch/csrc/autograd/variable.h>
#include <torch/torch.h>

#include <utility>

#include "device_stream.h"

namespace taas::torch_engine {
namespace {

// Tells the runtime a parameter's gradient is final: AccumulateGrad calls it once the step's
// last contribution was added (on a GPU: enqueued) into the runtime's gradient buffer.
class GradientReady : public ::torch::autograd::PostAccumulateGradHook {
 public:
  explicit GradientReady(const taas::Variable* variable) : variable_(variable) {}
  void operator()(const ::torch::autograd::Variable&) override { MarkGradientReady(*variable_); }

 private:
  const taas::Variable* variable_;
};

Shape ShapeOf(const ::torch::Tensor& tensor) {
  return Shape(tensor.sizes().begin(), tensor.sizes().end());
}

std::string Describe(const ::torch::Tensor& tensor) {
  std::ostringstream out;
  out << tensor.scalar_type() << " " << tensor.sizes() << " on " << tensor.device();
  return out.str();
}

// A view of a float32 tensor's elements as the runtime sees them (no copy).
Tensor RuntimeView(const ::torch::Tensor& tensor, Device device) {
  return Tensor::View(tensor.data_ptr<float>(), ShapeOf(tensor), device);
}

}  // namespace

absl::StatusOr<::torch::Device> TorchDevice(Device device) {
  switch (device.type) {
    case DeviceType::kCpu:
      return ::torch::Device(::torch::kCPU);
    case DeviceType::kCuda:
      TAAS_RETURN_IF_ERROR(LoadBackend(device));
      return ::torch::Device(::torch::kCUDA, static_cast<::torch::DeviceIndex>(device.index));
    case DeviceType::kSimulated:
      break;
  }
  return absl::InvalidArgumentError("LibTorch cannot compute on " + DeviceName(device) +
                                    ": a torch model runs on the CPU or a CUDA device");
}

// One tensor of the module as the runtime sees it.
struct BoundModule::Bound {
  std::string name;
  ::torch::Tensor tensor;  // the module's own (shares its TensorImpl)
  taas::Variable variable;
  // An integer buffer: the float32 copy the runtime keeps as its state, on the same device.
  ::torch::Tensor shadow;
};

BoundModule::BoundModule(::torch::nn::Module& module, ::torch::Device device, Device runtime_device)
    : module_(module), device_(device), runtime_device_(runtime_device) {}

BoundModule::~BoundModule() {
  for (auto& p : parameters_) {
    if (p->tensor.defined()) ::torch::autograd::impl::set_post_acc_grad_hooks(p->tensor, nullptr);
  }
}

absl::StatusOr<std::unique_ptr<BoundModule>> BoundModule::Bind(ModelBuilder& builder,
                                                               ::torch::nn::Module& module) {
  TAAS_ASSIGN_OR_RETURN(::torch::Device device, TorchDevice(builder.info().device));
  std::unique_ptr<BoundModule> bound(new BoundModule(module, device, builder.info().device));
  try {
    TAAS_RETURN_IF_ERROR(bound->Register(builder));
  } catch (const std::exception& e) {
    return absl::InvalidArgumentError(std::string("binding the torch module: ") + e.what());
  }
  builder.SetEngine(bound.get());
  return bound;
}

absl::Status BoundModule::Register(ModelBuilder& builder) {
  const Device device = builder.info().device;
  const auto on_device = [&](const std::string& name,
                             const ::torch::Tensor& tensor) -> absl::Status {
    if (tensor.device() != device_) {
      std::ostringstream fix;
      fix << "move the module to the replica's device first: module->to(" << device_ << ")";
      return absl::InvalidArgumentError(name + " is " + Describe(tensor) + ", not on " +
                                        DeviceName(device) + ": " + fix.str());
    }
    if (!tensor.is_contiguous()) {
      return absl::InvalidArgumentError(name + " (" + Describe(tensor) +
                                        ") is not contiguous: make it so before build_model "
                                        "returns (tensor.contiguous())");
    }
    return absl::OkStatus();
  };
  for (const auto& item : module_.named_parameters(/*recurse=*/true)) {
    const ::torch::Tensor& p = item.value();
    const std::string name = "parameter " + item.key();
    TAAS_RETURN_IF_ERROR(on_device(name, p));
    if (p.scalar_type() != ::torch::kFloat32) {
      return absl::InvalidArgumentError(name + " is " + Describe(p) +
                                        ": the runtime trains and keeps float32 parameters; "
                                        "convert the module with module->to(torch::kFloat32)");
    }
    auto bound = std::make_unique<Bound>();
    bound->name = item.key();
    bound->tensor = p;
    bound->variable.name = item.key();
    bound->variable.value = RuntimeView(p, device);
    (p.requires_grad() ? parameters_ : states_).push_back(std::move(bound));
  }
  for (const auto& item : module_.named_buffers(/*recurse=*/true)) {
    const ::torch::Tensor& b = item.value();
    const std::string name = "buffer " + item.key();
    TAAS_RETURN_IF_ERROR(on_device(name, b));
    auto bound = std::make_unique<Bound>();
    bound->name = item.key();
    bound->tensor = b;
    bound->variable.name = item.key();
    if (b.scalar_type() == ::torch::kFloat32) {
      bound->variable.value = RuntimeView(b, device);
    } else if (::c10::isIntegralType(b.scalar_type(), /*includeBool=*/false)) {
      bound->shadow = b.to(::torch::kFloat32).contiguous();
      bound->variable.value = RuntimeView(bound->shadow, device);
    } else {
      return absl::InvalidArgumentError(name + " is " + Describe(b) +
                                        ": the runtime keeps float32 and integer buffers; "
                                        "convert the module with module->to(torch::kFloat32)");
    }
    states_.push_back(std::move(bound));
  }
  for (auto& p : parameters_) builder.AddVariable(&p->variable);
  for (auto& s : states_) builder.AddState(&s->variable);
  return absl::OkStatus();
}

absl::Status BoundModule::VariablesPlaced() {
  TAAS_RETURN_IF_ERROR(UseComputeStream(runtime_device_));
  ::torch::NoGradGuard no_grad;
  const auto options = ::torch::TensorOptions().dtype(::torch::kFloat32).device(device_);
  for (auto& p : parameters_) {
    const auto sizes = p->tensor.sizes().vec();
    p->tensor.set_data(::torch::from_blob(p->variable.value.data(), sizes, options));
    p->tensor.mutable_grad() = ::torch::from_blob(p->variable.gradient.data(), sizes, options);
    ::torch::autograd::impl::set_post_acc_grad_hooks(p->tensor,
                                                     std::make_unique<GradientReady>(&p->variable));
  }
  return CheckUnchanged();
}

absl::Status BoundModule::BeforeStep() {
  TAAS_RETURN_IF_ERROR(UseComputeStream(runtime_device_));
  ::torch::NoGradGuard no_grad;
  for (auto& p : parameters_) {
    if (p->tensor.grad().defined()) p->tensor.mutable_grad().zero_();
  }
  // The runtime may have restored the state (a checkpoint, a warm start) into the shadows.
  for (auto& s : states_) {
    if (s->shadow.defined()) s->tensor.copy_(s->shadow);
  }
  return absl::OkStatus();
}

absl::Status BoundModule::AfterStep() {
  TAAS_RETURN_IF_ERROR(CheckUnchanged());
  ::torch::NoGradGuard no_grad;
  for (auto& s : states_) {
    if (s->shadow.defined()) s->shadow.copy_(s->tensor);
  }
  return absl::OkStatus();
}

std::string BoundModule::ExceptionMessage(const std::exception& e) const {
  if (const auto* error = dynamic_cast<const ::c10::Error*>(&e)) {
    return error->what_without_backtrace();
  }
  return e.what();
}

absl::Status BoundModule::CheckUnchanged() const {
  const auto parameters = module_.named_parameters(/*recurse=*/true);
  const auto buffers = module_.named_buffers(/*recurse=*/true);
  if (parameters.size() + buffers.size() != parameters_.size() + states_.size()) {
    return absl::InvalidArgumentError(
        "the torch module has " + std::to_string(parameters.size()) + " parameters and " +
        std::to_string(buffers.size()) + " buffers, " +
        std::to_string(parameters_.size() + states_.size()) +
        " when it was bound: register every parameter and buffer before build_model returns");
  }
  const auto check = [&](const Bound& b, const ::torch::Tensor* now, bool trained) {
    const std::string what = (trained ? "parameter " : "tensor ") + b.name;
    if (now == nullptr) {
      return absl::InvalidArgumentError(what +
                                        " is no longer in the module: keep the tensors "
                                        "build_model registered");
    }
    const void* expected = b.shadow.defined() ? b.tensor.data_ptr() : b.variable.value.data();
    if (now->data_ptr() != expected || ShapeOf(*now) != b.variable.value.shape()) {
      return absl::InvalidArgumentError(
          what + " was replaced (now " + Describe(*now) + ", bound as " +
          ShapeString(b.variable.value.shape()) +
          "): change a parameter in place (tensor.copy_()), never assign a new one or resize it "
          "after build_model");
    }
    if (now->requires_grad() != trained) {
      return absl::InvalidArgumentError(
          what + (trained ? " was frozen" : " was unfrozen") +
          " after build_model: set requires_grad before the module is bound");
    }
    if (trained &&
        (!now->grad().defined() ||
         now->grad().data_ptr() != static_cast<const void*>(b.variable.gradient.data()))) {
      return absl::InvalidArgumentError(
          "parameter " + b.name +
          ": its gradient is no longer the runtime's buffer (zero_grad() or an assignment to "
          ".grad() dropped it): the runtime zeroes gradients before each step; do not call "
          "zero_grad or a torch::optim optimizer");
    }
    return absl::OkStatus();
  };
  for (const auto& p : parameters_) {
    TAAS_RETURN_IF_ERROR(check(*p, parameters.find(p->name), /*trained=*/true));
  }
  for (const auto& s : states_) {
    const ::torch::Tensor* now = parameters.find(s->name);
    TAAS_RETURN_IF_ERROR(check(*s, now != nullptr ? now : buffers.find(s->name), false));
  }
  return absl::OkStatus();
}

StepResult BoundModule::Result(const ::torch::Tensor& loss, std::int64_t examples) {
  StepResult result;
  result.examples = examples;
  if (!loss.defined() || loss.numel() != 1 || loss.scalar_type() != ::torch::kFloat32 ||
      loss.device() != device_) {
    result.error = absl::InvalidArgumentError(
        "the step's loss is " + (loss.defined() ? Describe(loss) : std::string("undefined")) +
        ": return one float32 element on the replica's device (the mean of the batch's losses)");
    return result;
  }
  loss_ = loss.detach().contiguous();
  result.device_loss =
      Tensor::View(loss_.data_ptr<float>(), {1},
                   device_.is_cuda() ? Device{DeviceType::kCuda, device_.index()} : Device::Cpu());
  return result;
}

absl::StatusOr<Tensor> BoundModule::Outputs(const ::torch::Tensor& outputs) {
  if (!outputs.defined() || (outputs.dim() != 1 && outputs.dim() != 2) ||
      outputs.scalar_type() != ::torch::kFloat32 || outputs.device() != device_) {
    return absl::InvalidArgumentError(
        "the outputs are " + (outputs.defined() ? Describe(outputs) : std::string("undefined")) +
        ": return float32 [batch] or [batch, k] on the replica's device");
  }
  outputs_ = outputs.detach().contiguous();
  return RuntimeView(outputs_, runtime_device_);
}

std::vector<Variable*> BoundModule::variables() const {
  std::vector<Variable*> out;
  for (const auto& p : parameters_) out.push_back(&p->variable);
  return out;
}

std::vector<Variable*> BoundModule::states() const {
  std::vector<Variable*> out;
  for (const auto& s : states_) out.push_back(&s->variable);
  return out;
}

}  // namespace taas::torch_engine
