// LibTorch as a model engine: a model written with torch::nn (autograd, any layer LibTorch has),
// trained by the taas runtime exactly as one written with the built-in layers (taas/nn): on
// parameter servers or with all-reduce, checkpointed by the chief, scored by the evaluator.
//
//   class Net : public taas::DistModel {
//     absl::Status build_model(taas::ModelBuilder& builder) override {
//       net_ = MyNet();                                    // a torch::nn::ModuleHolder
//       net_->to(taas::torch_engine::TorchDevice(builder.info().device).value());
//       TAAS_ASSIGN_OR_RETURN(module_, taas::torch_engine::BoundModule::Bind(builder, *net_));
//       builder.SetOptimizer(...);  // the runtime's update rules, never a torch::optim
//       return absl::OkStatus();
//     }
//     taas::StepResult train(taas::Session&) override {
//       torch::Tensor loss = torch::nn::functional::cross_entropy(net_->forward(x), y);
//       loss.backward();                                   // gradients land in the runtime's
//       return module_->Result(loss, x.size(0));           // buffers; no step reads the loss
//     }
//   };
//
// What binding does (docs/trainer-runtime.md, "LibTorch models"):
//  - Each parameter that requires a gradient is a runtime Variable named as named_parameters()
//    names it ("layer1.0.conv1.weight"). Once the runtime placed the variables, the parameter's
//    data is a view of the runtime's value buffer and its .grad() a view of the runtime's
//    gradient buffer, on the replica's device: no step copies a parameter or a gradient. Autograd
//    adds into the gradients, which the binding zeroes before each step (do not call zero_grad or
//    a torch::optim optimizer: the runtime applies the update, on the PS or on each replica).
//  - A hook after each parameter's gradient is accumulated tells the runtime it is final, so
//    under all-reduce a bucket of gradients is reduced while backward goes on.
//  - Buffers (BatchNorm's running statistics) and frozen parameters (requires_grad(false)) are
//    the runtime's state (ModelBuilder::AddState): kept on the device, checkpointed from the
//    chief, restored, never pushed or all-reduced. An integer buffer (num_batches_tracked) is
//    kept as float32 beside it (exact up to 2^24), copied on the device around each step.
// Errors (InvalidArgument, naming the tensor and the fix, never a throw): a parameter that is not
// float32, not on the replica's device, or not contiguous; a module whose parameters or buffers
// were replaced or changed shape after binding; gradients dropped by zero_grad.
#pragma once

#include <torch/nn/module.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "taas/base/status.h"
#include "taas/runtime/dist_model.h"

namespace taas::torch_engine {

// The torch device of a replica's device (TrainerInfo::device): the CPU, or a CUDA device, whose
// LibTorch backend this loads (libtorch_cuda.so, only when a replica uses a GPU).
// InvalidArgument for a device LibTorch cannot compute on (the simulated test device);
// FailedPrecondition for a GPU in a build without CUDA or without LibTorch's CUDA libraries.
absl::StatusOr<::torch::Device> TorchDevice(Device device);

class BoundModule : public EngineHooks {
 public:
  // Registers `module`'s parameters and buffers with `builder` (variables and state, above) and
  // the binding itself as the model's engine. Call from build_model once the module is complete
  // and on builder.info().device; the binding must live as long as the model (keep the
  // unique_ptr in the DistModel) and the module as long as the binding.
  static absl::StatusOr<std::unique_ptr<BoundModule>> Bind(ModelBuilder& builder,
                                                           ::torch::nn::Module& module);

  BoundModule(const BoundModule&) = delete;
  BoundModule& operator=(const BoundModule&) = delete;
  ~BoundModule() override;

  // What train() returns for a step whose loss is `loss` (a scalar float tensor on the replica's
  // device) over `examples` examples: the loss stays on the device (StepResult::device_loss,
  // kept alive until the next step), read only when the runtime logs or summarises it.
  StepResult Result(const ::torch::Tensor& loss, std::int64_t examples);

  // What predict() returns as PredictOutputs::outputs for `outputs` (float32, [batch] or
  // [batch, k], on the replica's device; the logits of a classifier): a view of them, no copy,
  // kept alive until the next call. InvalidArgument describing the tensor for another.
  absl::StatusOr<Tensor> Outputs(const ::torch::Tensor& outputs);

  // The runtime's variables and state, in registration order (for tests and warm starts).
  std::vector<Variable*> variables() const;
  std::vector<Variable*> states() const;

  // EngineHooks.
  absl::Status VariablesPlaced() override;
  absl::Status BeforeStep() override;
  absl::Status AfterStep() override;
  // A LibTorch error's message without its C++ backtrace.
  std::string ExceptionMessage(const std::exception& e) const override;

 private:
  struct Bound;
  BoundModule(::torch::nn::Module& module, ::torch::Device device, Device runtime_device);
  absl::Status Register(ModelBuilder& builder);
  absl::Status CheckUnchanged() const;

  ::torch::nn::Module& module_;
  ::torch::Device device_;
  Device runtime_device_;                           // the same device, as the runtime names it
  std::vector<std::unique_ptr<Bound>> parameters_;  // trained
  std::vector<std::unique_ptr<Bound>> states_;      // frozen parameters and buffers
  ::torch::Tensor loss_;                            // the last step's, kept for device_loss
  ::torch::Tensor outputs_;                         // the last Outputs', kept for the runtime
};

}  // namespace taas::torch_engine
