// Fashion-MNIST models written with LibTorch's torch::nn, as a team would write its own: a
// ResNet-style CNN with BatchNorm and residual blocks, and an LSTM that reads each image as 28
// time steps of 28 pixels (the seeds' RNN). Both take [batch, 1, 28, 28] float images in [0, 1]
// and return [batch, 10] logits. The runtime knows nothing of their layers: taas/torch/module.h
// binds their parameters and buffers.
#pragma once

#include <torch/nn/module.h>
#include <torch/nn/modules/batchnorm.h>
#include <torch/nn/modules/container/sequential.h>
#include <torch/nn/modules/conv.h>
#include <torch/nn/modules/linear.h>
#include <torch/nn/modules/rnn.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "taas/base/status.h"

namespace taas::torch_models {

// Two 3x3 convolutions with BatchNorm, added to the block's input (through a 1x1 convolution and
// BatchNorm when the block changes the width or the resolution), as in He et al.'s ResNet.
class ResidualBlockImpl : public ::torch::nn::Module {
 public:
  ResidualBlockImpl(std::int64_t in, std::int64_t out, std::int64_t stride);
  ::torch::Tensor forward(const ::torch::Tensor& x);

 private:
  ::torch::nn::Conv2d conv1_{nullptr}, conv2_{nullptr};
  ::torch::nn::BatchNorm2d bn1_{nullptr}, bn2_{nullptr};
  ::torch::nn::Sequential shortcut_{nullptr};  // empty: the identity
};
TORCH_MODULE(ResidualBlock);

// A stem (3x3 conv 16, BatchNorm, ReLU), three stages of one residual block each (16, 32 at
// stride 2, 64 at stride 2), global average pooling and a linear head: its parameters are named
// stem.*, stage1.*, stage2.*, stage3.* (the trunk) and head.* (what transfer learning retrains).
class ResNetImpl : public ::torch::nn::Module {
 public:
  ResNetImpl();
  ::torch::Tensor forward(const ::torch::Tensor& images);
  // The trunk's modules, for freezing (the transfer recipe).
  std::vector<std::string> TrunkPrefixes() const {
    return {"stem.", "stem_bn.", "stage1.", "stage2.", "stage3."};
  }

 private:
  ::torch::nn::Conv2d stem_{nullptr};
  ::torch::nn::BatchNorm2d stem_bn_{nullptr};
  ResidualBlock stage1_{nullptr}, stage2_{nullptr}, stage3_{nullptr};
  ::torch::nn::Linear head_{nullptr};
};
TORCH_MODULE(ResNet);

// An LSTM of 128 units over the 28 rows of an image, then a linear layer on its last output.
class LstmClassifierImpl : public ::torch::nn::Module {
 public:
  LstmClassifierImpl();
  ::torch::Tensor forward(const ::torch::Tensor& images);

 private:
  ::torch::nn::LSTM lstm_{nullptr};
  ::torch::nn::Linear head_{nullptr};
};
TORCH_MODULE(LstmClassifier);

// The built-in engine's Fashion-MNIST CNN (examples/fashion-mnist-models, Cnn) in torch::nn, so
// that the two engines compare on one model (bench/torch): 3x3 valid convolutions of 32, 64 and 64
// filters with ReLU, 2x2 max pooling after the first two, dense 64 with ReLU and 10 logits;
// Keras's initialisers like the original (Glorot-uniform weights, zero biases).
class CnnImpl : public ::torch::nn::Module {
 public:
  CnnImpl();
  ::torch::Tensor forward(const ::torch::Tensor& images);

 private:
  ::torch::nn::Conv2d conv1_{nullptr}, conv2_{nullptr}, conv3_{nullptr};
  ::torch::nn::Linear dense1_{nullptr}, logits_{nullptr};
};
TORCH_MODULE(Cnn);

// One of the models above by name ("resnet", "lstm", "cnn"), as a Module with forward(images) ->
// logits, its parameters initialised from `seed` (the same on every replica: the chief's are the
// job's). InvalidArgument naming the choices for another name.
class Classifier {
 public:
  static absl::StatusOr<Classifier> Create(const std::string& name, std::uint64_t seed);
  ::torch::nn::Module& module() { return *module_; }
  ::torch::Tensor forward(const ::torch::Tensor& images);
  // Freezes (requires_grad false) the parameters whose names start with one of the model's trunk
  // prefixes (ResNet only; InvalidArgument for a model without a trunk). A frozen trunk's
  // BatchNorm layers stay in evaluation mode (SetTraining), so its statistics are frozen too.
  absl::Status FreezeTrunk();
  // Training mode (BatchNorm's batch statistics, updated running ones) or evaluation mode.
  void SetTraining(bool training);

 private:
  std::string name_;
  std::shared_ptr<::torch::nn::Module> module_;
  bool trunk_frozen_ = false;
};

}  // namespace taas::torch_models
