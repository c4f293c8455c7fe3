// The two Fashion-MNIST networks, shared by the distributed examples and the benchmark.
//
// - Mlp: 784-500-10 with ReLU, L2 on the kernels (TensorFlow 1's l2_regularizer(1e-4), the layers'
//   kernel_regularizer L2(5e-5)), truncated-normal(0.1) kernels and 0.1 biases, SGD with
//   exponential decay and moving averages for evaluation (TensorFlow's classic MNIST tutorial
//   network).
// - Cnn: Conv32 3x3 - MaxPool 2 - Conv64 3x3 - MaxPool 2 - Conv64 3x3 - Flatten - Dense64 -
//   Dense10, ReLU, Glorot-uniform kernels and zero biases, Adam (the Keras ConvNet).
//
// A model is driven by one thread. Batches come from a taas::data::Pipeline built with
// example_shape().
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "taas/data/pipeline.h"
#include "taas/nn/compute.h"
#include "taas/nn/sequential.h"
#include "taas/nn/softmax_cross_entropy.h"
#include "taas/optim/optimizer.h"

namespace taas::fashion_mnist {

struct BatchStats {
  float loss = 0.0f;         // mean cross-entropy plus the L2 term
  std::int64_t correct = 0;  // predictions equal to the label
  std::int64_t examples = 0;
};

class Model {
 public:
  virtual ~Model() = default;
  Model(const Model&) = delete;
  Model& operator=(const Model&) = delete;

  // Variables in a stable order with unique names ("conv1/kernel", "conv1/bias", ...).
  std::vector<Variable*> variables() { return network_.variables(); }
  // Forward and backward on one batch, on the device its images are on, without waiting for the
  // device: overwrites every variable's gradient (the layers' L2 included) and returns the loss's
  // statistics there (nn::SoftmaxCrossEntropy::Compute's: [kLossMean] the mean cross-entropy plus
  // the L2 term), valid until the next call. InvalidArgument for a batch whose images do not fit
  // the network or whose labels the loss refuses (the error names the layer or the row).
  absl::StatusOr<Tensor*> Step(const data::Batch& batch);
  // The same, its statistics brought to the host (waits for the device).
  absl::StatusOr<BatchStats> TrainStep(const data::Batch& batch);
  // Forward only, in inference mode.
  absl::StatusOr<BatchStats> Evaluate(const data::Batch& batch);
  // The logits [batch, kClasses] in inference mode, on the images' device, valid until the next
  // call.
  absl::StatusOr<const Tensor*> Logits(const data::Batch& batch);

  virtual std::string name() const = 0;
  // {784} for the MLP, {28, 28, 1} (NHWC) for the CNN.
  virtual Shape example_shape() const = 0;
  // The optimizer of the reference tutorial; `steps_per_epoch` sets the decay period.
  virtual optim::OptimizerConfig DefaultOptimizer(std::int64_t steps_per_epoch) const = 0;
  // Moving-average decay for evaluation weights, 0 when the model uses none.
  virtual float MovingAverageDecay() const { return 0.0f; }

  nn::Sequential& network() { return network_; }

 protected:
  Model() = default;
  nn::ComputeContext context_;
  nn::Sequential network_;

 private:
  nn::SoftmaxCrossEntropy loss_;
};

class Mlp final : public Model {
 public:
  explicit Mlp(std::uint64_t seed = 1);
  std::string name() const override { return "mlp"; }
  Shape example_shape() const override { return {784}; }
  optim::OptimizerConfig DefaultOptimizer(std::int64_t steps_per_epoch) const override;
  float MovingAverageDecay() const override { return 0.99f; }
};

class Cnn final : public Model {
 public:
  // `conv1_chunk` examples at a time go through conv1 and pool1 (nn::ChunkedConvPool, which
  // keeps a chunk's conv1 output in cache: 16 examples are 1.4 MB); 0, the default, runs them as
  // two plain layers over the whole batch. On our 2-vCPU machines the two measured the same.
  explicit Cnn(std::uint64_t seed = 1, std::int64_t conv1_chunk = 0);
  std::string name() const override { return "cnn"; }
  Shape example_shape() const override { return {28, 28, 1}; }
  optim::OptimizerConfig DefaultOptimizer(std::int64_t steps_per_epoch) const override;
};

// "mlp" or "cnn"; InvalidArgument otherwise.
// Fashion-MNIST's labels are 0..9: the models' logits, and what a data set's labels must be below.
inline constexpr std::int64_t kClasses = 10;

absl::StatusOr<std::unique_ptr<Model>> CreateModel(const std::string& name, std::uint64_t seed);

}  // namespace taas::fashion_mnist
