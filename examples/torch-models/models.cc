#include "taas/torch_models/models.h"

#include <torch/nn/functional.h>
#include <torch/torch.h>

namespace taas::torch_models {

namespace nn = ::torch::nn;

ResidualBlockImpl::ResidualBlockImpl(std::int64_t in, std::int64_t out, std::int64_t stride) {
  conv1_ = register_module(
      "conv1", nn::Conv2d(nn::Conv2dOptions(in, out, 3).stride(stride).padding(1).bias(false)));
  bn1_ = register_module("bn1", nn::BatchNorm2d(out));
  conv2_ =
      register_module("conv2", nn::Conv2d(nn::Conv2dOptions(out, out, 3).padding(1).bias(false)));
  bn2_ = register_module("bn2", nn::BatchNorm2d(out));
  shortcut_ = register_module("shortcut", nn::Sequential());
  if (stride != 1 || in != out) {
    shortcut_->push_back(nn::Conv2d(nn::Conv2dOptions(in, out, 1).stride(stride).bias(false)));
    shortcut_->push_back(nn::BatchNorm2d(out));
  }
}

::torch::Tensor ResidualBlockImpl::forward(const ::torch::Tensor& x) {
  ::torch::Tensor y = ::torch::relu(bn1_->forward(conv1_->forward(x)));
  y = bn2_->forward(conv2_->forward(y));
  return ::torch::relu(y + (shortcut_->is_empty() ? x : shortcut_->forward(x)));
}

ResNetImpl::ResNetImpl() {
  stem_ = register_module("stem", nn::Conv2d(nn::Conv2dOptions(1, 16, 3).padding(1).bias(false)));
  stem_bn_ = register_module("stem_bn", nn::BatchNorm2d(16));
  stage1_ = register_module("stage1", ResidualBlock(16, 16, 1));
  stage2_ = register_module("stage2", ResidualBlock(16, 32, 2));
  stage3_ = register_module("stage3", ResidualBlock(32, 64, 2));
  head_ = register_module("head", nn::Linear(64, 10));
}

::torch::Tensor ResNetImpl::forward(const ::torch::Tensor& images) {
  ::torch::Tensor x = ::torch::relu(stem_bn_->forward(stem_->forward(images)));
  x = stage3_->forward(stage2_->forward(stage1_->forward(x)));
  x = ::torch::adaptive_avg_pool2d(x, {1, 1}).flatten(1);
  return head_->forward(x);
}

LstmClassifierImpl::LstmClassifierImpl() {
  lstm_ = register_module("lstm", nn::LSTM(nn::LSTMOptions(28, 128).batch_first(true)));
  head_ = register_module("head", nn::Linear(128, 10));
}

::torch::Tensor LstmClassifierImpl::forward(const ::torch::Tensor& images) {
  // [batch, 1, 28, 28] -> 28 steps of 28 pixels.
  auto output = std::get<0>(lstm_->forward(images.view({images.size(0), 28, 28})));
  return head_->forward(output.select(1, 27));
}

CnnImpl::CnnImpl() {
  conv1_ = register_module("conv1", nn::Conv2d(nn::Conv2dOptions(1, 32, 3)));
  conv2_ = register_module("conv2", nn::Conv2d(nn::Conv2dOptions(32, 64, 3)));
  conv3_ = register_module("conv3", nn::Conv2d(nn::Conv2dOptions(64, 64, 3)));
  dense1_ = register_module("dense1", nn::Linear(3 * 3 * 64, 64));
  logits_ = register_module("logits", nn::Linear(64, 10));
  ::torch::NoGradGuard no_grad;
  for (auto& item : named_parameters()) {
    if (item.value().dim() > 1) {
      nn::init::xavier_uniform_(item.value());
    } else {
      nn::init::zeros_(item.value());
    }
  }
}

::torch::Tensor CnnImpl::forward(const ::torch::Tensor& images) {
  ::torch::Tensor x = ::torch::max_pool2d(::torch::relu(conv1_->forward(images)), 2);
  x = ::torch::max_pool2d(::torch::relu(conv2_->forward(x)), 2);
  x = ::torch::relu(conv3_->forward(x)).flatten(1);
  return logits_->forward(::torch::relu(dense1_->forward(x)));
}

absl::StatusOr<Classifier> Classifier::Create(const std::string& name, std::uint64_t seed) {
  ::torch::manual_seed(seed);
  Classifier c;
  c.name_ = name;
  if (name == "resnet") {
    c.module_ = ResNet().ptr();
  } else if (name == "lstm") {
    c.module_ = LstmClassifier().ptr();
  } else if (name == "cnn") {
    c.module_ = Cnn().ptr();
  } else {
    return absl::InvalidArgumentError("model " + name + ": expected resnet, lstm or cnn");
  }
  return c;
}

::torch::Tensor Classifier::forward(const ::torch::Tensor& images) {
  if (auto* resnet = dynamic_cast<ResNetImpl*>(module_.get())) return resnet->forward(images);
  if (auto* cnn = dynamic_cast<CnnImpl*>(module_.get())) return cnn->forward(images);
  return static_cast<LstmClassifierImpl&>(*module_).forward(images);
}

absl::Status Classifier::FreezeTrunk() {
  auto* resnet = dynamic_cast<ResNetImpl*>(module_.get());
  if (resnet == nullptr) {
    return absl::InvalidArgumentError("model " + name_ + " has no trunk to freeze (resnet has)");
  }
  for (auto& item : module_->named_parameters()) {
    for (const auto& prefix : resnet->TrunkPrefixes()) {
      if (item.key().rfind(prefix, 0) == 0) item.value().set_requires_grad(false);
    }
  }
  trunk_frozen_ = true;
  SetTraining(module_->is_training());
  return absl::OkStatus();
}

void Classifier::SetTraining(bool training) {
  module_->train(training);
  auto* resnet = dynamic_cast<ResNetImpl*>(module_.get());
  if (!trunk_frozen_ || resnet == nullptr) return;
  for (const auto& item : module_->named_children()) {
    for (const auto& prefix : resnet->TrunkPrefixes()) {
      if (item.key() + "." == prefix) item.value()->eval();
    }
  }
}

}  // namespace taas::torch_models
