#include "taas/fashion_mnist/models.h"

#include <memory>
#include <string>
#include <utility>

#include "taas/nn/layers.h"
#include "taas/tensor/initializers.h"

namespace taas::fashion_mnist {

namespace {

// The loss's statistics (on any device) on the host, for a batch of `examples`.
absl::StatusOr<BatchStats> ReadStats(const Tensor& stats, std::int64_t examples) {
  Tensor host({nn::kLossStats});
  TAAS_RETURN_IF_ERROR(CopyInto(stats, host));
  return BatchStats{host.data()[nn::kLossMean],
                    static_cast<std::int64_t>(host.data()[nn::kLossCorrect]), examples};
}

}  // namespace

absl::StatusOr<Tensor*> Model::Step(const data::Batch& batch) {
  TAAS_ASSIGN_OR_RETURN(const Tensor* logits, network_.Forward(batch.images, true));
  TAAS_ASSIGN_OR_RETURN(Tensor * stats, loss_.Compute(*logits, batch.labels));
  TAAS_RETURN_IF_ERROR(network_.AddRegularizationLoss(*stats));
  TAAS_RETURN_IF_ERROR(network_.Backward(loss_.Backward()));
  return stats;
}

absl::StatusOr<BatchStats> Model::TrainStep(const data::Batch& batch) {
  TAAS_ASSIGN_OR_RETURN(const Tensor* stats, Step(batch));
  return ReadStats(*stats, batch.images.shape()[0]);
}

absl::StatusOr<BatchStats> Model::Evaluate(const data::Batch& batch) {
  TAAS_ASSIGN_OR_RETURN(const Tensor* logits, network_.Forward(batch.images, false));
  TAAS_ASSIGN_OR_RETURN(Tensor * stats, loss_.Compute(*logits, batch.labels));
  TAAS_RETURN_IF_ERROR(network_.AddRegularizationLoss(*stats));
  return ReadStats(*stats, batch.images.shape()[0]);
}

absl::StatusOr<const Tensor*> Model::Logits(const data::Batch& batch) {
  return network_.Forward(batch.images, false);
}

Mlp::Mlp(std::uint64_t seed) {
  using nn::Activation;
  using nn::DenseOptions;
  // Truncated normal kernels (stddev 0.1) seeded from `seed`, biases of 0.1; the tutorial's
  // l2_regularizer(1e-4) on the kernels, 1e-4 * sum(w^2) / 2.
  const nn::Regularizer l2 = nn::regularizers::L2(0.5e-4f);
  network_.Add(std::make_unique<nn::Dense>(
      DenseOptions{.name = "hidden",
                   .inputs = 784,
                   .units = 500,
                   .activation = Activation::kRelu,
                   .kernel_initializer = initializers::TruncatedNormal(0.1f).WithSeed(seed * 2 + 1),
                   .bias_initializer = initializers::Constant(0.1f),
                   .kernel_regularizer = l2}));
  network_.Add(std::make_unique<nn::Dense>(
      DenseOptions{.name = "logits",
                   .inputs = 500,
                   .units = kClasses,
                   .kernel_initializer = initializers::TruncatedNormal(0.1f).WithSeed(seed * 2 + 2),
                   .bias_initializer = initializers::Constant(0.1f),
                   .kernel_regularizer = l2}));
}

optim::OptimizerConfig Mlp::DefaultOptimizer(std::int64_t steps_per_epoch) const {
  optim::OptimizerConfig config;
  config.name = "sgd";
  config.learning_rate = {0.1f, 0.99f, steps_per_epoch, true};
  return config;
}

Cnn::Cnn(std::uint64_t seed, std::int64_t conv1_chunk) {
  using nn::Activation;
  using nn::Conv2DOptions;
  using nn::DenseOptions;
  using nn::MaxPool2DOptions;
  // Keras's defaults (Glorot-uniform kernels, zero biases), each kernel seeded from `seed` so
  // that a model's seed, not its layer names, picks its starting point.
  auto glorot = [&](std::uint64_t layer) {
    return initializers::GlorotUniform().WithSeed(seed * 8 + layer);
  };
  // Every convolution: 3x3, stride 1, no padding, ReLU; every pool 2x2 with stride 2.
  auto conv = [&](std::string name, std::int64_t in_channels, std::int64_t filters,
                  std::uint64_t layer) {
    return std::make_unique<nn::Conv2D>(context_,
                                        Conv2DOptions{.name = std::move(name),
                                                      .in_channels = in_channels,
                                                      .filters = filters,
                                                      .kernel_size = 3,
                                                      .strides = 1,
                                                      .padding = nn::Padding::kValid,
                                                      .activation = Activation::kRelu,
                                                      .kernel_initializer = glorot(layer)});
  };
  auto pool = [&](std::string name) {
    return std::make_unique<nn::MaxPool2D>(
        context_, MaxPool2DOptions{.name = std::move(name), .pool_size = 2, .strides = 2});
  };
  // conv1 and pool1 run in chunks so conv1's 26x26x32 output stays in cache (ChunkedConvPool).
  auto conv1_layer = conv("conv1", 1, 32, 1);
  auto pool1_layer = pool("pool1");
  if (conv1_chunk > 0) {
    network_.Add(std::make_unique<nn::ChunkedConvPool>(std::move(conv1_layer),
                                                       std::move(pool1_layer), conv1_chunk));
  } else {
    network_.Add(std::move(conv1_layer));
    network_.Add(std::move(pool1_layer));
  }
  network_.Add(conv("conv2", 32, 64, 2));
  network_.Add(pool("pool2"));
  network_.Add(conv("conv3", 64, 64, 3));
  network_.Add(std::make_unique<nn::Flatten>("flatten"));
  network_.Add(std::make_unique<nn::Dense>(DenseOptions{.name = "dense1",
                                                        .inputs = 3 * 3 * 64,
                                                        .units = 64,
                                                        .activation = Activation::kRelu,
                                                        .kernel_initializer = glorot(4)}));
  network_.Add(std::make_unique<nn::Dense>(DenseOptions{
      .name = "logits", .inputs = 64, .units = kClasses, .kernel_initializer = glorot(5)}));
}

optim::OptimizerConfig Cnn::DefaultOptimizer(std::int64_t) const {
  optim::OptimizerConfig config;
  config.name = "adam";
  config.learning_rate = {0.001f, 1.0f, 0, false};
  return config;
}

absl::StatusOr<std::unique_ptr<Model>> CreateModel(const std::string& name, std::uint64_t seed) {
  if (name == "mlp") return std::unique_ptr<Model>(new Mlp(seed));
  if (name == "cnn") return std::unique_ptr<Model>(new Cnn(seed));
  return absl::InvalidArgumentError("model must be \"mlp\" or \"cnn\", got \"" + name + "\"");
}

}  // namespace taas::fashion_mnist
