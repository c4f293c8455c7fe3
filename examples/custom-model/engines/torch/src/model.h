// custom-model: a small convolutional classifier on Fashion-MNIST written with LibTorch's
// torch::nn (two 3x3 convolutions with BatchNorm and max pooling, then a linear layer), trained by
// the taas runtime. Replace the network and the data with yours: build_model binds the module to
// the runtime (taas/torch/module.h), train() runs forward and loss.backward(), and the runtime
// does the rest: parameter servers or all-reduce, the update rule, checkpoints, the evaluator.
#pragma once

#include <torch/nn/module.h>
#include <torch/nn/modules/batchnorm.h>
#include <torch/nn/modules/conv.h>
#include <torch/nn/modules/linear.h>

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "taas/data/evaluate.h"
#include "taas/data/pipeline.h"
#include "taas/runtime/dist_model.h"
#include "taas/torch/module.h"

namespace custom_model {

// The model's own arguments: what follows `--` in the manifest's `args` (or on the command line).
struct Options {
  std::int64_t batch_size = 64;  // --batch_size=N: examples per train() call
  std::int64_t channels = 16;    // --channels=N: the first convolution's (the second has 2N)
  double learning_rate = 0.001;  // --learning_rate=X: Adam's step size
  std::string data_dir = taas::data::kFashionMnistDir;  // --data_dir=DIR: the IDX .gz files
  std::uint64_t seed = 1;                               // --seed=N: initial weights and shuffling
};

// With taas's flag parser (taas/runtime/model_args.h): InvalidArgument naming the argument and
// its allowed values for anything else.
absl::StatusOr<Options> ParseArgs(const std::vector<std::string>& args);

// [batch, 1, 28, 28] images in [0, 1] -> [batch, 10] logits. Its parameters are named as
// named_parameters() names them ("conv1.weight", "bn1.bias", ...): the runtime's variables and
// the checkpoint's names; BatchNorm's running statistics are the runtime's state (checkpointed,
// never trained).
class NetworkImpl : public torch::nn::Module {
 public:
  explicit NetworkImpl(std::int64_t channels);
  torch::Tensor forward(const torch::Tensor& images);

 private:
  torch::nn::Conv2d conv1_{nullptr}, conv2_{nullptr};
  torch::nn::BatchNorm2d bn1_{nullptr}, bn2_{nullptr};
  torch::nn::Linear logits_{nullptr};
};
TORCH_MODULE(Network);

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
  // `taas predict JOB.yaml --model-dir DIR --input FILES --output OUT.csv`: the checkpoint's
  // logits and class for each image of the IDX files FILES (with the labels file beside each,
  // when there is one: the labels are written beside the predictions).
  absl::StatusOr<std::unique_ptr<taas::data::BatchStream>> predict_inputs(
      taas::Session& session, const taas::PredictRequest& request) override;
  absl::StatusOr<taas::PredictOutputs> predict(taas::Session& session,
                                               const taas::data::Batch& batch) override;

 private:
  Options options_;
  torch::Device device_ = torch::kCPU;
  Network network_{nullptr};
  // The binding of network_ to the runtime: lives as long as the model, after network_.
  std::unique_ptr<taas::torch_engine::BoundModule> bound_;
  std::unique_ptr<taas::data::Pipeline> train_;
  std::optional<taas::data::Batch> batch_;  // the step's: its images are the input's memory
  std::shared_ptr<const taas::data::ImageDataset> test_;
};

}  // namespace custom_model
