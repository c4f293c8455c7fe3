// custom-model: a small classifier on Fashion-MNIST (784-128-10, ReLU, softmax cross-entropy,
// SGD), written against the installed taas SDK. Replace the network and the data with yours: the
// runtime only needs build_model() to register the variables and train() to write their
// gradients (taas/runtime/dist_model.h).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "taas/data/evaluate.h"
#include "taas/data/pipeline.h"
#include "taas/nn/layers.h"
#include "taas/nn/sequential.h"
#include "taas/nn/softmax_cross_entropy.h"
#include "taas/runtime/dist_model.h"

namespace custom_model {

// The model's own arguments: what follows `--` in the manifest's `args` (or on the command line).
struct Options {
  std::int64_t batch_size = 64;  // --batch_size=N: examples per train() call
  std::int64_t hidden = 128;     // --hidden=N: units of the hidden layer
  double learning_rate = 0.1;    // --learning_rate=X
  double l2 = 0.0;  // --l2=X: the kernels' L2 penalty (Keras's kernel_regularizer=l2(X))
  std::string data_dir = taas::data::kFashionMnistDir;  // --data_dir=DIR: the IDX .gz files
  std::uint64_t seed = 1;                               // --seed=N: initial weights and shuffling
};

// With taas's flag parser (taas/runtime/model_args.h): InvalidArgument naming the argument and
// its allowed values for anything else.
absl::StatusOr<Options> ParseArgs(const std::vector<std::string>& args);

struct BatchStats {
  float loss = 0.0f;
  std::int64_t correct = 0;
  std::int64_t examples = 0;
};

// The layers, apart from the runtime so a unit test can train them on a batch of its own.
class Network {
 public:
  explicit Network(const Options& options);
  // Kernels and biases, with unique names ("hidden/kernel", ...).
  std::vector<taas::Variable*> variables() { return layers_.variables(); }
  // Forward and backward: overwrites every variable's gradient.
  absl::StatusOr<BatchStats> TrainStep(const taas::data::Batch& batch);
  // Forward only, in inference mode.
  absl::StatusOr<BatchStats> Evaluate(const taas::data::Batch& batch);

 private:
  taas::nn::Sequential layers_;
  taas::nn::SoftmaxCrossEntropy loss_;
};

// The DistModel the runtime drives: the same binary is a parameter server, worker, chief or
// evaluator, as TF_CONFIG says.
class Model final : public taas::DistModel {
 public:
  absl::Status build_model(taas::ModelBuilder& builder) override;
  taas::StepResult train(taas::Session& session) override;
  // Accuracy and loss on the test set: on the Evaluator replica for each checkpoint, and on the
  // chief when TAAS_EVAL_ON_CHIEF asks (job.yaml: once training ends).
  // A failure (no test set in --data_dir) is returned: the job ends with it named.
  absl::StatusOr<std::map<std::string, double>> evaluate(taas::Session& session) override;

 private:
  Options options_;
  std::unique_ptr<Network> network_;
  std::unique_ptr<taas::data::Pipeline> train_;
  std::shared_ptr<const taas::data::ImageDataset> test_;
};

}  // namespace custom_model
